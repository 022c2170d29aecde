#!/usr/bin/env python3
"""web_browser.py — drives headless Chromium for tests/it_web.sh through its DevTools pipe
(--remote-debugging-pipe: JSON messages ended by NUL, read on fd 3, written on fd 4), with
the standard library only: open a page, wait for a condition in it, click an element with
real mouse events at its place on the screen, read text, take a screenshot. Loopback
pages only; every wait bounded. Prints "key value" lines (facts); the script checks them.

  web_browser.py answer URL CHOICE SHOT.png   wait for the lesson's question, click choice
                                              CHOICE (A, B, ...), wait for the counts line
  web_browser.py text URL SHOT.png            the caption, question and counts shown
  web_browser.py scrub URL PAGE               the scrubber's place for the position of page
                                              PAGE (the URL's id), then a click on its middle
"""
import base64, json, os, select, shutil, subprocess, sys, tempfile, time, urllib.parse, urllib.request


class Browser:
    def __init__(self, width=1000, height=900):
        assert shutil.which('chromium'), 'chromium is not installed'
        self.dir = tempfile.mkdtemp(prefix='downpour-cdp.')
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():   # the child's fd 3 reads our messages, its fd 4 writes its answers
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)   # above 4: dup2 may not clobber
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
             '--remote-debugging-pipe', '--user-data-dir=' + self.dir,
             '--window-size=%d,%d' % (width, height), 'about:blank'],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b''
        self.next_id = 0
        self.session = None
        target = self.call('Target.createTarget', url='about:blank')['targetId']
        self.session = self.call('Target.attachToTarget', targetId=target, flatten=True)['sessionId']
        self.call('Page.enable')
        self.call('Emulation.setDeviceMetricsOverride', width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def call(self, method, timeout=30, **params):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params}
        if self.session and not method.startswith('Target.'):
            msg['sessionId'] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b'\0')
        deadline = time.time() + timeout
        while True:
            while b'\0' in self.buf:
                raw, self.buf = self.buf.split(b'\0', 1)
                m = json.loads(raw)
                if m.get('id') == self.next_id:
                    if 'error' in m:
                        raise RuntimeError('%s: %s' % (method, m['error']))
                    return m.get('result', {})
            left = deadline - time.time()
            if left <= 0 or not select.select([self.from_chrome], [], [], left)[0]:
                raise TimeoutError(method)
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError('chromium closed its pipe')
            self.buf += chunk

    def js(self, expr):
        r = self.call('Runtime.evaluate', expression=expr, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r:
            raise RuntimeError('js: %s' % r['exceptionDetails'].get('text'))
        return r.get('result', {}).get('value')

    def wait(self, expr, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                v = self.js(expr)
            except RuntimeError:   # the page is still loading: its elements are not there yet
                v = None
            if v:
                return v
            time.sleep(0.1)
        return None

    def open(self, url):
        u = urllib.parse.urlparse(url)
        assert u.hostname in ('127.0.0.1', 'localhost', '::1'), 'loopback only: ' + url
        self.call('Page.navigate', url=url)

    def click(self, selector):
        """A real click: mouse down and up at the middle of the element on the screen."""
        box = self.js('(function () { var e = document.querySelector(%s); if (!e) return null;'
                      ' e.scrollIntoView({block: "center"}); var r = e.getBoundingClientRect();'
                      ' return [r.left + r.width / 2, r.top + r.height / 2]; })()' % json.dumps(selector))
        if not box:
            return False
        for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
            self.call('Input.dispatchMouseEvent', type=kind, x=box[0], y=box[1], button='left',
                      clickCount=1)
        return True

    def screenshot(self, path):
        data = self.call('Page.captureScreenshot', format='png')['data']
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call('Browser.close', timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def out(key, value):
    print(key, str(value).replace('\n', ' '))
    sys.stdout.flush()


def text_of(b, i):
    return b.js('document.getElementById(%s).textContent' % json.dumps(i)) or ''


def mode_text(url, shot):
    b = Browser()
    try:
        b.open(url)
        out('caption_shown', int(bool(b.wait("document.getElementById('caption').textContent.length > 0"))))
        out('question_shown', int(bool(b.wait("!document.getElementById('lesson').hidden", 5))))
        out('caption', text_of(b, 'caption'))
        out('question', text_of(b, 'qtext'))
        out('choices', b.js("document.querySelectorAll('#choices button').length"))
        b.wait("document.getElementById('counts').textContent.length > 0", 5)
        out('counts', text_of(b, 'counts') or '-')
        b.screenshot(shot)
    finally:
        b.close()


def mode_answer(url, choice, shot):
    b = Browser()
    try:
        b.open(url)
        shown = b.wait("document.querySelectorAll('#choices button').length > 0")
        out('question_shown', int(bool(shown)))
        out('question', text_of(b, 'qtext'))
        out('caption', text_of(b, 'caption'))
        out('clicked', int(b.click('#choices button[data-choice="%s"]' % choice)))
        got = b.wait("document.getElementById('counts').textContent.length > 0")
        out('counts_shown', int(bool(got)))
        out('counts', text_of(b, 'counts') or '-')
        out('result', text_of(b, 'result') or '-')
        out('buttons_disabled', int(bool(b.js(
            "[].every.call(document.querySelectorAll('#choices button'), function (x) { return x.disabled; })"))))
        out('right_marked', b.js("document.querySelectorAll('#choices button.right').length"))
        b.screenshot(shot)
    finally:
        b.close()


def page_state(url, page):
    """The server's /state of a page, read here over HTTP, not through the page's script."""
    u = urllib.parse.urlparse(url)
    with urllib.request.urlopen('%s://%s/state?id=%s' % (u.scheme, u.netloc, page), timeout=10) as r:
        return json.loads(r.read())


def mode_scrub(url, page):
    """The scrubber: where it stands for the page's position, then a real click on its
    middle and the position the server moved the page to."""
    b = Browser()
    try:
        b.open(url)
        out('time_shown', int(bool(b.wait("document.getElementById('time').textContent.indexOf('/') > 0 && "
                                          "document.getElementById('frame').naturalWidth > 0"))))
        st = page_state(url, page)
        span = max(st['t1'] - st['t0'], 1e-9)
        out('scrub_shown', b.js("document.getElementById('scrub').value"))
        out('scrub_expected', round(1000 * (st['t'] - st['t0']) / span))
        out('clicked', int(b.click('#scrub')))
        deadline = time.time() + 10
        while time.time() < deadline and page_state(url, page)['t_ns'] == st['t_ns']:
            time.sleep(0.1)
        time.sleep(0.6)   # the page's next polls: it shows the server's new position
        v = int(b.js("document.getElementById('scrub').value"))
        now = page_state(url, page)
        out('scrub_value', v)
        out('seek_error_s', '%.9f' % abs(now['t'] - (st['t0'] + v / 1000 * span)))
        out('playing', int(bool(now.get('playing'))))
    finally:
        b.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == 'answer':
        mode_answer(args[0], args[1], args[2])
    elif mode == 'text':
        mode_text(args[0], args[1])
    elif mode == 'scrub':
        mode_scrub(args[0], args[1])
    else:
        sys.exit('web_browser.py: unknown mode ' + mode)


if __name__ == '__main__':
    main()
