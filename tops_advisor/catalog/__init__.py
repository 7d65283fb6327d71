"""The hardware catalog: validated device files, name resolution, and the devices' prices."""

from .loader import Catalog, load_catalog, load_hardware_file, shipped_catalog_dir
from .prices import PriceReport, device_prices, load_prices
from .schema import Hardware, Source

__all__ = ["Catalog", "Hardware", "PriceReport", "Source", "device_prices", "load_catalog", "load_hardware_file",
           "load_prices", "shipped_catalog_dir"]
