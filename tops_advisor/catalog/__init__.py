"""The hardware catalog: validated device files and name resolution."""

from .loader import Catalog, load_catalog, load_hardware_file, shipped_catalog_dir
from .schema import Hardware, Source

__all__ = ["Catalog", "Hardware", "Source", "load_catalog", "load_hardware_file", "shipped_catalog_dir"]
