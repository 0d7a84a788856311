"""A headless Chromium driven through chromedriver's W3C WebDriver protocol
(HTTP and JSON, with Python's standard library only: Debian's chromium and
chromium-driver packages, nothing from PyPI).

    with Browser(tmp_path) as b:
        b.get("http://127.0.0.1:PORT/ui/")
        b.wait(lambda: b.js("return document.title") == "acctd")
        b.click("#tree th[data-sort=cpu]")
        png = b.screenshot("#plots")

missing() says why a browser cannot run here (for pytest.skip), or None.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference


def missing():
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.path.exists(path):
            return "%s is not installed (Debian package %s)" % (path, pkg)
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(AssertionError):
    pass


class Browser:
    def __init__(self, tmp_path, width=1280, height=1000):
        self.port = _free_port()
        self.log = open(os.path.join(str(tmp_path), "chromedriver.log"), "w")
        self.proc = subprocess.Popen([CHROMEDRIVER, "--port=%d" % self.port], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port
        end = time.monotonic() + 60
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except (OSError, WebDriverError):
                pass
            if self.proc.poll() is not None or time.monotonic() > end:
                raise WebDriverError("chromedriver did not start (see %s)" % self.log.name)
            time.sleep(0.1)
        args = ["--headless=new", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--window-size=%d,%d" % (width, height),
                "--user-data-dir=" + os.path.join(str(tmp_path), "chromium-profile")]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run its sandbox as root
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            # an alert (what a hostile name would open) stays open and is
            # asked for by alert_text(); commands go on
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}}
        try:
            self.session = self._call("POST", "/session", caps, timeout=120)["sessionId"]
        except Exception:
            self.close()
            raise

    def _call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                doc = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            v = doc.get("value") or {}
            raise WebDriverError("%s %s: %s: %s" % (method, path, v.get("error"), v.get("message")))
        return doc.get("value")

    def _s(self, method, path, body=None, timeout=60):
        return self._call(method, "/session/%s%s" % (self.session, path), body, timeout)

    def get(self, url):
        self._s("POST", "/url", {"url": url})

    def js(self, script, *args):
        """Run script (a function body; `arguments` are args) in the page; its return value."""
        return self._s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self._s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self._s("POST", "/element/%s/click" % self.find(css), {})

    def alert_text(self):
        """The text of an open alert, or None."""
        try:
            return self._s("GET", "/alert/text")
        except WebDriverError as e:
            if "no such alert" in str(e):
                return None
            raise

    def screenshot(self, css=None):
        """PNG bytes of the viewport, or of the element css."""
        path = "/element/%s/screenshot" % self.find(css) if css else "/screenshot"
        return base64.b64decode(self._s("GET", path))

    def wait(self, pred, timeout=120, what="condition"):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            try:
                v = pred()
                if v:
                    return v
            except WebDriverError as e:
                last = e
            time.sleep(0.2)
        raise AssertionError("timed out waiting for %s%s" % (what, " (last error: %s)" % last if last else ""))

    def close(self):
        if getattr(self, "session", None):
            try:
                self._call("DELETE", "/session/" + self.session, timeout=30)
            except Exception:
                pass
            self.session = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
