"""Screenshots of the five tabs of ``mlmprob app`` in headless Chromium, on a real model.

    pip install -e ".[app,dev]"      # gradio, selenium; plus Debian's chromium and chromium-driver
    HF_HUB_OFFLINE=1 python docs/app/screenshots.py [--model antiberty] [--out docs/app]

Starts the app on a free local port, runs each tab on its example input (the page's defaults),
waits for the result and saves ``OUT/{score,mutations,infill,sample,pair}.png`` (each kept under
300 KB by reducing colours when needed).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

MAX_BYTES = 300_000


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shrink(path: Path) -> None:
    """Palette PNG (256 colours) when the screenshot is over ``MAX_BYTES``."""
    if path.stat().st_size <= MAX_BYTES:
        return
    from PIL import Image

    Image.open(path).convert("RGB").quantize(colors=256).save(path, optimize=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="antiberty")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = ap.parse_args(argv)

    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from mlmprob import load_mlm
    from mlmprob.app.ui import build_app, launch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mlm = load_mlm(args.model, device="cpu", dtype="float32")
    demo = build_app(mlm, model_name=args.model)
    _, url, _ = launch(demo, port=_port(), block=False)
    opts = Options()
    opts.binary_location = args.chromium
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1500",
        "--hide-scrollbars",
    ):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(args.chromedriver), options=opts)
    wait = WebDriverWait(driver, 600, poll_frequency=0.5)

    def tab(name: str) -> None:
        driver.find_element(By.XPATH, f"//button[@role='tab' and normalize-space()='{name}']").click()
        time.sleep(0.5)

    def run(button: str, done) -> None:
        driver.find_element(By.ID, button).click()
        wait.until(lambda d: done(d))
        time.sleep(1.0)  # let plots and colours settle

    def shot(name: str, height: int = 1500) -> None:
        driver.set_window_size(1280, height)
        time.sleep(0.5)
        path = out / f"{name}.png"
        driver.save_screenshot(str(path))
        _shrink(path)
        print(f"{path}: {path.stat().st_size // 1000} KB", file=sys.stderr)

    text = lambda el_id: lambda d: d.find_element(By.ID, el_id).text  # noqa: E731
    try:
        driver.get(url)
        wait.until(lambda d: d.find_elements(By.ID, "score-run"))
        run("score-run", lambda d: "seq1" in text("score-table")(d))
        shot("score", 1100)

        tab("Mutations")
        run("mut-run", lambda d: "forward rows" in text("mut-note")(d))
        cell = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#mut-heatmap [data-testid='cell-4-10']"))[0]
        cell.click()  # residue 5, substitution L
        wait.until(lambda d: "hcb" in text("mut-table")(d))
        time.sleep(1.0)
        shot("mutations", 1500)

        tab("Infill")
        run("infill-run", lambda d: "2" in text("infill-hcb")(d) and "Gap:" in d.find_element(By.TAG_NAME, "body").text)
        shot("infill", 1000)

        tab("Sample")
        box = driver.find_element(By.CSS_SELECTOR, "#sample-init input")
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys("random")
        box.send_keys(Keys.ENTER)  # start from random residues at the free positions: the trace falls
        time.sleep(0.5)
        run("sample-run", lambda d: "Epoch 20/20" in text("sample-summary")(d))
        shot("sample", 1400)

        tab("Pair joint")
        run("pair-run", lambda d: "AG" in text("pair-table")(d) and d.find_elements(By.CSS_SELECTOR, "#pair-plot img"))
        shot("pair", 1200)
    finally:
        driver.quit()
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
