"""Rendering: tables, JSON and plots. Nothing here computes a prediction."""
