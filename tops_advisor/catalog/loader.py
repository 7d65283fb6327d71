"""Load device files into a Catalog, and resolve the names people type to catalog ids.

The shipped catalog lives in the repository's top-level ``hardware_db/`` (installed into the wheel as
``tops_advisor/_data/hardware_db``). Extra directories (``--catalog DIR`` or the ``TOPS_ADVISOR_CATALOG``
environment variable, several joined with the OS path separator) add devices or override shipped ones by id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ..errors import AmbiguousHardwareError, CatalogError, UnknownHardwareError
from ..suggest import did_you_mean
from .schema import Hardware, normalise_name

ENV_VAR = "TOPS_ADVISOR_CATALOG"


def shipped_catalog_dir() -> Path:
    """The shipped hardware_db directory: in the wheel, or at the repository root in a source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_data" / "hardware_db", here.parent / "hardware_db"):
        if candidate.is_dir():
            return candidate
    raise CatalogError("the shipped hardware catalog is missing from this installation",
                       hint="reinstall tops-advisor; the wheel carries tops_advisor/_data/hardware_db")


UNKNOWN_DEVICE_KEY = "unknown key (not a device-file field; 'tops-advisor hardware schema' lists them)"


def format_validation_error(path: Path | str, err: ValidationError, unknown_key: str = UNKNOWN_DEVICE_KEY) -> str:
    """One line: the file, the first failing field and what was expected (``unknown_key`` for a key the model
    does not have)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if first["type"] == "extra_forbidden":
        msg = unknown_key
    got = first.get("input")
    got_text = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
    more = f" [+{len(err.errors()) - 1} more]" if len(err.errors()) > 1 else ""
    where = f"field {loc}: " if loc else ""  # whole-model checks name their fields in the message
    return f"{path}: {where}{msg}{got_text}{more}"


def read_toml(path: Path, error: type[CatalogError]) -> dict:
    """The parsed contents of a catalog TOML file; ``error`` in one line naming it when it is missing,
    unreadable or not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


def load_hardware_file(path: Path | str) -> Hardware:
    """Parse and validate one device file; the file name must equal the id."""
    path = Path(path)
    raw = read_toml(path, CatalogError)
    try:
        hw = Hardware.model_validate(raw)
    except ValidationError as exc:
        raise CatalogError(format_validation_error(path, exc)) from None
    if path.stem != hw.id:
        raise CatalogError(f"{path}: field id: {hw.id!r} must equal the file name {path.stem!r}")
    return hw


def _files_in(directory: Path) -> list[Path]:
    if not directory.exists():
        raise CatalogError(f"catalog directory {directory} does not exist")
    if not directory.is_dir():
        raise CatalogError(f"catalog path {directory} is not a directory")
    try:
        # iterdir, not glob: glob swallows a permission error and would make the directory look empty
        return sorted(p for p in directory.iterdir() if p.suffix == ".toml" and p.is_file())
    except OSError as exc:
        raise CatalogError(f"catalog directory {directory} cannot be read: {exc}") from None


def check_id_clashes(origins: dict[str, Path]) -> None:
    """Two ids that differ only in case, dashes or underscores ('rtx-4090', 'rtx4090') name one device twice:
    every alias lookup between them would be ambiguous. Raise naming both files."""
    by_name: dict[str, str] = {}
    for device_id in sorted(origins):
        key = normalise_name(device_id)
        if key in by_name:
            other = by_name[key]
            raise CatalogError(f"{origins[device_id]}: id {device_id!r} names the same device as {other!r} "
                               f"({origins[other]}); ids must differ by more than dashes",
                               hint=f"rename one file, or make one file override the other by using id {other!r}")
        by_name[key] = device_id


class Catalog:
    """An immutable set of devices with name resolution."""

    def __init__(self, devices: Iterable[Hardware], origins: dict[str, Path] | None = None):
        self._by_id: dict[str, Hardware] = {}
        for hw in devices:
            self._by_id[hw.id] = hw
        self.origins = dict(origins or {})
        self._aliases: dict[str, set[str]] = {}
        for hw in self._by_id.values():
            for name in (hw.id, hw.name, *hw.aliases):
                self._aliases.setdefault(normalise_name(name), set()).add(hw.id)

    @classmethod
    def from_dirs(cls, dirs: Iterable[Path | str]) -> Catalog:
        """Later directories override earlier ones by id; two files with one id in one directory is an error."""
        devices: dict[str, Hardware] = {}
        origins: dict[str, Path] = {}
        for d in dirs:
            seen: dict[str, Path] = {}
            for path in _files_in(Path(d)):
                hw = load_hardware_file(path)
                if hw.id in seen:
                    raise CatalogError(f"{path}: id {hw.id!r} is also claimed by {seen[hw.id]}")
                seen[hw.id] = path
                devices[hw.id] = hw
                origins[hw.id] = path
        check_id_clashes(origins)
        return cls(devices.values(), origins)

    def __iter__(self) -> Iterator[Hardware]:
        return iter(sorted(self._by_id.values(), key=lambda h: h.id))

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, device_id: object) -> bool:
        return device_id in self._by_id

    @property
    def ids(self) -> list[str]:
        return sorted(self._by_id)

    def get(self, name: str) -> Hardware:
        """Resolve an id or alias ('h200-sxm', 'RTX 4090', 'rtx4090'); unknown names suggest the closest ids."""
        if name in self._by_id:
            return self._by_id[name]
        hits = self._aliases.get(normalise_name(name), set())
        if len(hits) == 1:
            return self._by_id[next(iter(hits))]
        if len(hits) > 1:
            raise AmbiguousHardwareError(f"hardware name {name!r} is ambiguous: it matches {', '.join(sorted(hits))}",
                                         hint="use one of those ids")
        names = list(self._by_id) + [a for hw in self._by_id.values() for a in hw.aliases]
        hint = did_you_mean(name, names) or "run 'tops-advisor hardware list' for the ids"
        raise UnknownHardwareError(f"unknown hardware {name!r}", hint=hint)

    def select(self, names: Iterable[str]) -> list[Hardware]:
        return [self.get(n) for n in names]


def catalog_dirs(extra: Iterable[Path | str] = ()) -> list[Path]:
    """The shipped directory, then TOPS_ADVISOR_CATALOG's directories, then ``extra`` (last wins)."""
    dirs = [shipped_catalog_dir()]
    env = os.environ.get(ENV_VAR, "")
    dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in extra]
    return dirs


@lru_cache(maxsize=8)
def _cached(dirs: tuple[str, ...]) -> Catalog:
    return Catalog.from_dirs(Path(d) for d in dirs)


def load_catalog(extra: Iterable[Path | str] = ()) -> Catalog:
    """The shipped catalog plus user directories; cached per set of directories."""
    return _cached(tuple(str(d) for d in catalog_dirs(extra)))
