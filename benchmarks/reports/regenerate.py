"""Regenerate the shipped reports and data files from recorded measurements, as ``manifest.toml`` lists them.

    python benchmarks/reports/regenerate.py                 # every entry, in manifest order
    python benchmarks/reports/regenerate.py accuracy        # only the named entries
    python benchmarks/reports/regenerate.py --list          # names, scripts and what each writes
    python benchmarks/reports/regenerate.py --dry-run       # print the commands, run nothing

Run from the repository root (paths in the manifest are relative to it); no GPU needed. Each entry runs its
script with this Python; an argument written ``GLOB:pattern`` expands to the matching files, sorted. A failing
entry stops the run with its exit status.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).resolve().parent / "manifest.toml"


@dataclass(frozen=True)
class Step:
    """One command of an entry: a script and its arguments."""

    script: str
    args: tuple[str, ...]
    quiet: bool = False  # drop the script's stdout (a scorer that prints its table)

    def argv(self) -> list[str]:
        out = [sys.executable, self.script]
        for arg in self.args:
            if arg.startswith("GLOB:"):
                out += sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(arg[len("GLOB:"):]))
            else:
                out.append(arg)
        return out


@dataclass(frozen=True)
class Entry:
    """One generated report: its name, the files it writes and the commands that write them."""

    name: str
    writes: tuple[str, ...]
    steps: tuple[Step, ...]


def load_manifest(path: Path = MANIFEST) -> list[Entry]:
    """The manifest's entries; an entry has either ``script``/``args`` or a ``step`` list."""
    entries = []
    for raw in tomllib.loads(path.read_text(encoding="utf-8"))["report"]:
        steps = raw.get("step") or [{"script": raw["script"], "args": raw.get("args", [])}]
        entries.append(Entry(raw["name"], tuple(raw.get("writes", [])),
                             tuple(Step(s["script"], tuple(s.get("args", [])), s.get("quiet", False)) for s in steps)))
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise SystemExit(f"{path}: duplicate report names in {names}")
    return entries


def run(entry: Entry, dry_run: bool) -> int:
    """Run one entry's steps in order from the repository root; the first failing status, else 0."""
    for step in entry.steps:
        argv = step.argv()
        print(f"[{entry.name}] {shlex.join(['python', *argv[1:]])}", file=sys.stderr)
        if dry_run:
            continue
        status = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL if step.quiet else None).returncode
        if status:
            return status
    missing = [w for w in entry.writes if not dry_run and not (ROOT / w).exists()]
    if missing:
        print(f"[{entry.name}] did not write {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="entries to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the entries and exit")
    ap.add_argument("--dry-run", action="store_true", help="print the commands without running them")
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    args = ap.parse_args(argv)
    entries = load_manifest(args.manifest)
    if args.list:
        for e in entries:
            print(f"{e.name:16} {', '.join(s.script for s in e.steps)} -> {', '.join(e.writes)}")
        return 0
    known = {e.name: e for e in entries}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"unknown report {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    for entry in [known[n] for n in args.names] if args.names else entries:
        status = run(entry, args.dry_run)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
