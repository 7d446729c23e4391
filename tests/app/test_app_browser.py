"""The web app in a real browser: headless Chromium opens the page, runs Score on a sequence and checks
that the result table appears with the expected PLL; a screenshot goes to $MLMPROB_APP_SCREENSHOTS
(e.g. docs/app) or the test's tmp_path. Skips, naming what is missing, without chromium/chromedriver."""

import os
import socket
from pathlib import Path

import chromium
import pytest
from chromium import NEEDS_CHROMIUM

pytest.importorskip("gradio", reason="the app extra is not installed (pip install -e '.[app]')")
pytest.importorskip("selenium", reason="selenium is not installed (it is in the dev extra)")


pytestmark = NEEDS_CHROMIUM

SEQ = "EVQLVESGGGLVQPGGSLRLSCAASGFTFS"


def browser(width: int = 1280, height: int = 1500):
    return chromium.browser(width, height, "--hide-scrollbars")


def screenshot_dir(tmp_path) -> Path:
    d = Path(os.environ.get("MLMPROB_APP_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_score_in_a_browser(tiny_bert_dir, tmp_path, one_thread):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from mlmprob import load_mlm
    from mlmprob.app.compute import score_text
    from mlmprob.app.ui import build_app, launch

    mlm = load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    want = score_text(mlm, SEQ).rows[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = build_app(mlm, model_name="tiny")
    _, url, _ = launch(demo, port=port, block=False)
    driver = browser()
    try:
        driver.get(url)
        box = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#score-input textarea"))
        box.clear()
        box.send_keys(SEQ)
        driver.find_element(By.ID, "score-run").click()
        table = WebDriverWait(driver, 60).until(
            lambda d: (el := d.find_element(By.ID, "score-table")) and "seq1" in el.text and el
        )
        text = table.text
        assert f"{want.pll:.4f}" in text and f"{want.e_raw:.4f}" in text and str(want.n_tokens) in text
        tokens = driver.find_elements(By.CSS_SELECTOR, "#score-tokens span[title]")
        assert len(tokens) == len(SEQ)
        assert tokens[0].get_attribute("title").startswith("log q = ")
        path = screenshot_dir(tmp_path) / "score-tiny.png"
        driver.save_screenshot(str(path))
        assert path.stat().st_size > 10_000
    finally:
        driver.quit()
        demo.close()
