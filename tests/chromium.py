"""Headless Chromium for the browser tests (the web app's, the documentation site's): where chromium and chromedriver
are, a skip mark naming what is missing, and a driver."""

from __future__ import annotations

import os
import shutil

import pytest


def _find(*names):
    for n in names:
        p = shutil.which(n) or (n if os.path.isabs(n) and os.access(n, os.X_OK) else None)
        if p:
            return p
    return None


CHROMIUM = _find("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
CHROMEDRIVER = _find("/usr/bin/chromedriver", "chromedriver")
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs chromium and chromedriver (Debian: apt-get install chromium chromium-driver)",
)


def browser(width: int = 1280, height: int = 1500, *extra: str):
    """A headless Chromium driver of a ``width`` x ``height`` window (``extra``: more command-line switches)."""
    pytest.importorskip("selenium", reason="selenium is not installed (it is in the dev extra)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *extra):
        opts.add_argument(arg)
    opts.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
