#!/usr/bin/env python3
"""web_client.py — HTTP clients for tests/it_web.sh and bench/run.sh, standard library only,
loopback only, every wait bounded. Each mode prints "key value" lines (facts); the shell
script holds the checks.

  web_client.py controls URL DIR         play / pause / step / back through POST /control,
                                         reading the page's stream as the page would
  web_client.py follow URL DIR           two pages of a --follow server
  web_client.py live URL                 a page of `downpour hub --http`
  web_client.py share URL                two pages of their own at the same moment
  web_client.py crowd URL N              N-1 readers and one stalled client (never reads)
  web_client.py cap URL MAX              MAX idle connections, then one more
  web_client.py rate URL N SECONDS       N readers: frames per second each, bytes per frame
  web_client.py lesson URL DIR           a lesson trace: the page stops at the lesson's
                                         stops, its caption and question; 20 answers
  web_client.py badinput URL             bad input on every endpoint: one-line errors
  web_client.py slow URL                 a client that reads slowly beside a normal one
  web_client.py drive URL DIR            a page of `view --serve --follow`: follows the window
"""
import http.client, json, selectors, socket, struct, sys, threading, time, urllib.parse

# A stream: START, then each frame's PNG followed by PART_END (the next delimiter and
# header block, sent at once so that a browser shows the frame without waiting).
PART_END = b'\r\n--dpframe\r\nContent-Type: image/png\r\n\r\n'
START = PART_END[2:]
PNG_SIG = b'\x89PNG\r\n\x1a\n'


def hostport(url):
    u = urllib.parse.urlparse(url)
    assert u.hostname in ('127.0.0.1', 'localhost', '::1'), 'loopback only: ' + url
    return u.hostname, u.port


def control(url, page, op, **kw):
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    q = urllib.parse.urlencode(dict(id=page, op=op, **kw))
    c.request('POST', '/control?' + q)
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body


def get_json(url, path):
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    c.request('GET', path)
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body


class Stream:
    """One page's multipart stream: part() returns the next frame's PNG bytes."""

    def __init__(self, url, query):
        h, p = hostport(url)
        self.conn = http.client.HTTPConnection(h, p, timeout=20)
        self.conn.request('GET', '/stream?' + urllib.parse.urlencode(query))
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, 'stream: HTTP %d' % self.resp.status
        self.buf = b''
        self.count = 0
        self.nbytes = 0
        self.started = False

    def _more(self):
        chunk = self.resp.read1(65536)
        if not chunk:
            raise EOFError('stream closed')
        self.buf += chunk

    def part(self):
        if not self.started:
            while len(self.buf) < len(START):
                self._more()
            if not self.buf.startswith(START):
                raise ValueError('stream: expected the first delimiter, got %r' % self.buf[:40])
            self.buf = self.buf[len(START):]
            self.nbytes = len(START)
            self.started = True
        at = 0
        while True:
            i = self.buf.find(PART_END, at)
            if i >= 0:
                break
            at = max(0, len(self.buf) - len(PART_END))
            self._more()
        png, self.buf = self.buf[:i], self.buf[i + len(PART_END):]
        if not png.startswith(PNG_SIG):
            raise ValueError('stream: a part is not a PNG')
        self.count += 1
        self.nbytes += i + len(PART_END)
        return png

    def close(self):
        self.conn.close()


def get_bytes(url, path):
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    c.request('GET', path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return body


def save(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def out(key, value):
    print(key, value)
    sys.stdout.flush()


def part_until(s, pred, limit=30):
    """Reads parts until pred(png) holds (at most limit parts); returns the PNG or None."""
    for _ in range(limit):
        png = s.part()
        if pred(png):
            return png
    return None


def mode_controls(url, outdir):
    """Prints what the page sees; saves frames to outdir for the shell to compare with
    `downpour render` at the positions the server reported."""
    s = Stream(url, dict(id='ctl', at='2.5', paused='1'))
    first = s.part()
    save(outdir + '/first.png', first)
    st, j = control(url, 'ctl', 'step')
    out('step_status', st)
    out('step_t', j['t_ns'])
    out('step_playing', int(j['playing']))
    got = part_until(s, lambda png: png != first)
    out('step_frame_seen', int(bool(got)))
    if got:
        save(outdir + '/step.png', got)
    st, j = control(url, 'ctl', 'back')
    out('back_t', j['t_ns'])
    st, j = control(url, 'ctl', 'play')
    out('play_playing', int(j['playing']))
    start = j['t_ns']
    seen = []
    for _ in range(40):
        png = s.part()
        if png not in seen:
            seen.append(png)
        if len(seen) == 5:
            break
    out('play_distinct_frames', len(seen))
    out('play_moved', int(get_json(url, '/state?id=ctl')[1]['t_ns'] > start))
    st, j = control(url, 'ctl', 'pause')
    p = j['t_ns']
    out('pause_playing', int(j['playing']))
    out('pause_t', p)
    now = get_bytes(url, '/frame.png?id=ctl')   # the frame the page shows from now on
    save(outdir + '/pause.png', now)
    got = part_until(s, lambda png: png == now, 60)
    out('pause_frame_found', int(bool(got)))
    after = [s.part() for _ in range(2)] if got else []
    out('pause_next_two_same', int(len(after) == 2 and all(x == now for x in after)))
    time.sleep(0.5)
    out('pause_state_t', get_json(url, '/state?id=ctl')[1]['t_ns'])
    control(url, 'ctl', 'play')
    st, j = control(url, 'ctl', 'step')   # a step while playing pauses, as in the window
    out('step_while_playing', '%d:%d' % (st, j['playing']))
    for x, key in (('4', 'speed_4'), ('1000', 'speed_1000'), ('0.001', 'speed_0.001'), ('100', 'speed_100')):
        st, j = control(url, 'ctl', 'speed', x=x)
        out(key, '%d:%g' % (st, j.get('speed', -1)))
    t = control(url, 'ctl', 'seek', t='0')[1]['t_ns']   # the trace's start, paused
    control(url, 'ctl', 'play')
    time.sleep(0.5)
    st, j = control(url, 'ctl', 'pause')
    out('speed_100_moved_ns', j['t_ns'] - t)   # 100 x 0.5 s of wall time: past the end
    out('speed_100_at_end', int(abs(j['t_ns'] - j['t1'] * 1e9) < 1000))
    st, j = control(url, 'nobody', 'step')
    out('unknown_page_status', st)
    st, j = control(url, 'ctl', 'fly')
    out('bad_op_status', st)
    s.close()


def mode_follow(url, outdir):
    a = Stream(url, dict(id='a'))
    b = Stream(url, dict(id='b'))
    pa, pb = a.part(), b.part()
    save(outdir + '/follow-first.png', pa)
    out('same_bytes', int(pa == pb))
    st, j = control(url, 'a', 'step')
    out('step_t', j['t_ns'])
    got = part_until(b, lambda png: png != pb)
    out('b_moved', int(bool(got)))
    if got:
        save(outdir + '/follow-b-step.png', got)
    out('frames_rendered', get_json(url, '/stats')[1]['frames_rendered'])
    a.close()
    b.close()


def mode_start(url, pages):
    """For each page NAME[:paused=0|1]: opens its stream (with that query), reads its first
    frame (prints its size), waits a second, then prints NAME's /state: playing and t."""
    streams = []
    for spec in pages:
        name, _, q = spec.partition(':')
        query = dict(id=name)
        if q:
            k, _, v = q.partition('=')
            query[k] = v
        st = Stream(url, query)
        png = st.part()
        out(name + '_size', '%dx%d' % struct.unpack('>II', png[16:24]))
        streams.append((name, st))
    time.sleep(1.0)
    for name, st in streams:
        j = get_json(url, '/state?id=' + name)[1]
        out(name + '_playing', int(bool(j['playing'])))
        out(name + '_t', '%.3f' % j['t'])
        st.close()


def mode_share(url):
    a = Stream(url, dict(id='x', at='2.5', paused='1'))
    pa = a.part()
    b = Stream(url, dict(id='y', at='2.5', paused='1'))
    pb = b.part()
    out('same_bytes', int(pa == pb))
    out('frames_rendered', get_json(url, '/stats')[1]['frames_rendered'])
    a.close()
    b.close()


def mode_live(url):
    s = Stream(url, dict(id='live'))
    seen = [s.part()]
    for _ in range(200):        # the run has begun once the frames change
        png = s.part()
        if png != seen[-1]:
            seen.append(png)
        if len(seen) == 6:
            break
    out('changing_frames', len(seen))
    st = get_json(url, '/state?id=live')[1]
    out('live', int(st['live']))
    out('at_live', int(st['at_live']))
    # paused half a second behind the run, then played at 4x: it catches up (a second of
    # play gains three), and follows the live end again
    control(url, 'live', 'pause')
    time.sleep(0.5)
    control(url, 'live', 'speed', x='4')
    control(url, 'live', 'play')
    behind = get_json(url, '/state?id=live')[1]['at_live']
    time.sleep(1.0)
    out('caught_up', '%d:%d' % (behind, get_json(url, '/state?id=live')[1]['at_live']))
    s.close()


def mode_crowd(url, n):
    h, p = hostport(url)
    stop = threading.Event()
    readers = []
    lock = threading.Lock()
    errors = []

    def read(i):
        try:
            s = Stream(url, dict(id='c%d' % i))
            readers[i] = s
            while not stop.is_set():
                s.part()
        except Exception as e:  # counted: a reader that stops early fails the check
            with lock:
                errors.append('%d: %s' % (i, e))

    readers = [None] * (n - 1)
    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(n - 1)]
    for t in threads:
        t.start()
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect((h, p))
    stalled.sendall(b'GET /stream?id=stalled HTTP/1.1\r\nHost: x\r\n\r\n')
    deadline = time.time() + 60
    st = {}
    while time.time() < deadline:
        st = get_json(url, '/stats')[1]
        if st['dropped_stalled'] >= 1:
            break
        time.sleep(0.3)
    out('stalled_dropped_in_time', int(st.get('dropped_stalled', 0) >= 1))
    at_drop = [r.count if r else 0 for r in readers]
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(r and r.count >= c + 3 for r, c in zip(readers, at_drop)):
            break
        time.sleep(0.2)
    out('readers', len(readers))
    out('readers_3_more_after_drop', sum(1 for r, c in zip(readers, at_drop) if r and r.count >= c + 3))
    out('min_frames_before_drop', min(at_drop))
    stalled.settimeout(20)
    eof = 0
    try:
        while True:
            if not stalled.recv(65536):
                eof = 1
                break
    except (ConnectionResetError, BrokenPipeError):
        eof = 1
    except socket.timeout:
        eof = 0
    out('stalled_closed_by_server', eof)
    st = get_json(url, '/stats')[1]
    stop.set()
    for k in ('dropped_stalled', 'dropped_slow', 'dropped', 'frames_rendered', 'frames_sent',
              'frames_skipped', 'streams_total'):
        out(k, st[k])
    out('reader_errors', len(errors))
    for e in errors[:5]:
        out('reader_error', e.replace(' ', '_'))


def mode_cap(url, cap):
    h, p = hostport(url)
    idle = [socket.create_connection((h, p), timeout=10) for _ in range(cap)]
    time.sleep(0.5)   # let the server take them in before the one too many
    extra = socket.create_connection((h, p), timeout=10)
    try:
        refused = int(extra.recv(1) == b'')
    except ConnectionResetError:
        refused = 1
    except socket.timeout:
        refused = 0
    out('extra_closed', refused)
    idle.pop().close()
    st = {}
    for _ in range(50):   # the slot frees when the server notices the close
        try:
            st = get_json(url, '/stats')[1]
            break
        except (ConnectionError, http.client.HTTPException):
            time.sleep(0.1)
    out('refused', st.get('refused', -1))
    for s in idle + [extra]:
        s.close()


def mode_rate(url, n, secs):
    """N streams read by one thread (non-blocking sockets, HTTP/1.0: no chunking), counting
    delimiters: a Python client fast enough to keep up with 50 streams."""
    h, p = hostport(url)
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        s = socket.create_connection((h, p), timeout=10)
        s.sendall(('GET /stream?id=r%d HTTP/1.0\r\nHost: x\r\n\r\n' % i).encode())
        s.setblocking(False)
        c = {'tail': b'', 'frames': 0, 'bytes': 0}
        sel.register(s, selectors.EVENT_READ, c)
        conns.append((s, c))
    buf = bytearray(1 << 20)

    def pump(until):
        while time.time() < until:
            for key, _ in sel.select(timeout=0.2):
                c = key.data
                try:
                    k = key.fileobj.recv_into(buf)
                except BlockingIOError:
                    continue
                if k == 0:
                    sel.unregister(key.fileobj)
                    continue
                data = c['tail'] + bytes(buf[:k])
                c['frames'] += data.count(PART_END)
                c['tail'] = data[-(len(PART_END) - 1):]
                c['bytes'] += k

    deadline = time.time() + 30     # warm up: every stream has delivered a frame
    while time.time() < deadline and not all(c['frames'] for _, c in conns):
        pump(time.time() + 0.2)
    f0 = [c['frames'] for _, c in conns]
    b0 = [c['bytes'] for _, c in conns]
    t0 = time.time()
    pump(t0 + secs)
    el = time.time() - t0
    frames = [c['frames'] - f for (_, c), f in zip(conns, f0)]
    nbytes = sum(c['bytes'] - b for (_, c), b in zip(conns, b0))
    out('fps_mean', '%.2f' % (sum(frames) / n / el))
    out('fps_min', '%.2f' % (min(frames) / el))
    out('bytes_per_frame', '%.0f' % (nbytes / max(1, sum(frames))))
    st = get_json(url, '/stats')[1]
    out('render_ms', '%.1f' % st['render_ms_per_frame'])
    out('frames_skipped', st['frames_skipped'])
    for s, _ in conns:
        s.close()


def post(url, path):
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    c.request('POST', path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def wait_still(url, page, timeout=30):
    """Waits until page's position is paused and its frame shows that moment."""
    deadline = time.time() + timeout
    j = {}
    while time.time() < deadline:
        j = get_json(url, '/state?id=' + page)[1]
        if not j.get('playing') and j.get('frame_t_ns') == j.get('t_ns'):
            break
        time.sleep(0.1)
    return j


def mode_lesson(url, outdir):
    st, les = get_json(url, '/lesson')
    qs = les.get('questions', [])
    out('lesson_status', st)
    out('questions', len(qs))
    out('answers_hidden', int(all('answer' not in q for q in qs)))
    s = Stream(url, dict(id='les', at='0', paused='1', speed='20'))
    s.part()
    # Played from the start, the page stops where the window would: the lesson's pause at
    # step 1, then the question of step 10.
    for k in (1, 2):
        control(url, 'les', 'play')
        j = wait_still(url, 'les')
        out('stop%d_gstep' % k, j.get('gstep'))
        out('stop%d_question' % k, j.get('question'))
        out('stop%d_t' % k, j.get('t_ns'))
        with open('%s/caption-stop%d.txt' % (outdir, k), 'w') as f:
            f.write('%d %s\n' % (j['frame_t_ns'], j.get('caption') or '-'))
    control(url, 'les', 'seek', t='20')
    j = wait_still(url, 'les')
    out('seek_question', j.get('question'))
    with open(outdir + '/caption-seek.txt', 'w') as f:
        f.write('%d %s\n' % (j['frame_t_ns'], j.get('caption') or '-'))
    # 20 students answer question 0: 5 A, 12 B, 3 C (letters either case, or digits); the
    # first 10 at once, then one every 100 ms (so that the terminal's rate limit shows)
    picks = ['A'] * 5 + ['B', 'b', '1'] * 4 + ['C'] * 3
    res = []
    threads = [threading.Thread(target=lambda i=i, c=c: res.append(
        post(url, '/answer?id=py%d&q=0&choice=%s' % (i, c))[0])) for i, c in enumerate(picks)]
    for t in threads[:10]:
        t.start()
    for t in threads[:10]:
        t.join()
    for t in threads[10:]:
        t.start()
        t.join()
        time.sleep(0.1)
    out('burst_200', sum(1 for r in res if r == 200))
    st, body = post(url, '/answer?id=py0&q=0&choice=C')
    out('again_status', st)
    j = json.loads(body)
    out('again_keeps_first', int(j.get('choice') == 0))
    a = get_json(url, '/answers')[1]
    out('counts_q0', ','.join(str(x) for x in a['questions'][0]['counts']))
    out('answered_q0', a['questions'][0]['answered'])
    out('counts_q1', ','.join(str(x) for x in a['questions'][1]['counts']))
    s.close()


def mode_full(url, q, n):
    """Question q answered by n students (the server keeps WEB_MAX_ANSWERS = n a
    question) over one kept-alive connection, then by one more."""
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    taken = 0
    for i in range(n + 1):
        c.request('POST', '/answer?id=full%d&q=%d&choice=A' % (i, q))
        r = c.getresponse()
        body = r.read()
        taken += r.status == 200
    c.close()
    out('full_taken', taken)
    out('full_last', '%d:%s' % (r.status, json.loads(body).get('error', '-').replace(' ', '_')))
    out('full_answered', get_json(url, '/answers')[1]['questions'][q]['answered'])


def mode_badinput(url):
    """Each bad request: its status, and whether the body is one line of JSON with an error."""
    def one_line_error(body):
        try:
            return int(b'\n' not in body.strip() and 'error' in json.loads(body))
        except ValueError:
            return 0
    cases = [
        ('POST', '/answer?id=x&q=99&choice=A', 'unknown_question'),
        ('POST', '/answer?id=x&q=-1&choice=A', 'negative_question'),
        ('POST', '/answer?id=x&q=zero&choice=A', 'text_question'),
        ('POST', '/answer?id=x&choice=A', 'no_question'),
        ('POST', '/answer?id=x&q=0&choice=D', 'choice_out_of_range'),
        ('POST', '/answer?id=x&q=0&choice=AB', 'choice_two_letters'),
        ('POST', '/answer?id=x&q=0&choice=', 'choice_empty'),
        ('POST', '/answer?id=x&q=0', 'no_choice'),
        ('POST', '/answer?id=a%20b&q=0&choice=A', 'id_space'),
        ('POST', '/answer?id=' + 'x' * 48 + '&q=0&choice=A', 'id_too_long'),
        ('POST', '/answer?q=0&choice=A', 'no_id'),
        ('GET', '/answer?id=x&q=0&choice=A', 'answer_get'),
        ('GET', '/stream?id=b&at=soon', 'stream_at_text'),
        ('GET', '/stream?id=b&speed=-2', 'stream_speed_negative'),
        ('POST', '/control?id=les&op=seek&t=later', 'seek_text'),
        ('POST', '/control?id=les&op=speed&x=0', 'speed_zero'),
        ('POST', '/control?id=les&op=explode', 'op_unknown'),
        ('GET', '/control?id=les&op=play', 'control_get'),
        ('GET', '/state?id=nobody', 'state_unknown_page'),
        ('GET', '/frame.png?id=nobody', 'frame_unknown_page'),
        ('POST', '/stats', 'stats_post'),
        ('GET', '/no/such/thing', 'unknown_path'),
    ]
    bad = []
    for method, path, name in cases:
        h, p = hostport(url)
        c = http.client.HTTPConnection(h, p, timeout=20)
        c.request(method, path)
        r = c.getresponse()
        body = r.read()
        c.close()
        out('status_' + name, r.status)
        if not (400 <= r.status < 500 and one_line_error(body)):
            bad.append(name)
    out('not_one_line_4xx', ','.join(bad) or '-')
    # a request line far too long, and bytes that are not HTTP: answered, closed or left
    # waiting (libmicrohttpd waits for more of the latter), and no crash: still_serving
    h, p = hostport(url)
    for junk in (b'GET /answer?id=' + b'x' * 20000 + b' HTTP/1.1\r\nHost: x\r\n\r\n',
                 b'\x00\xff\x16\x03 not http at all\r\n\r\n'):
        k = socket.create_connection((h, p), timeout=2)
        k.sendall(junk)
        try:
            k.recv(4096)
        except (ConnectionResetError, socket.timeout):
            pass
        k.close()
    out('still_serving', int(get_json(url, '/stats')[0] == 200))


def mode_slow(url):
    """A normal reader beside one that reads slowly: first at most 16 KiB every 50 ms (a few
    frames a second: it must skip frames, and stay), then 2 KiB every 50 ms (40 KB/s: one
    frame takes seconds, it falls past the bound mid-frame and must be dropped). The
    normal reader must keep receiving throughout."""
    h, p = hostport(url)
    fast = Stream(url, dict(id='fast'))
    fast.part()
    stop = threading.Event()
    errors = []

    def read_fast():
        try:
            while not stop.is_set():
                fast.part()
        except Exception as e:
            errors.append(str(e))
    th = threading.Thread(target=read_fast, daemon=True)
    th.start()
    k = socket.socket()
    k.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    k.connect((h, p))
    k.sendall(b'GET /stream?id=slow HTTP/1.1\r\nHost: x\r\n\r\n')
    k.settimeout(20)
    state = {'frames': 0, 'tail': b'', 'closed': 0}

    def read_for(secs, chunk):
        t0 = time.time()
        while time.time() - t0 < secs:
            try:
                d = k.recv(chunk)
            except (ConnectionResetError, socket.timeout):
                d = b''
            if not d:
                state['closed'] = 1
                return
            data = state['tail'] + d
            state['frames'] += data.count(PART_END)
            state['tail'] = data[-(len(PART_END) - 1):]
            time.sleep(0.05)
    st0 = get_json(url, '/stats')[1]
    read_for(6, 16384)
    st1 = get_json(url, '/stats')[1]
    out('phase1_slow_frames', state['frames'])
    out('phase1_frames_rendered', st1['frames_rendered'] - st0['frames_rendered'])
    out('phase1_frames_skipped', st1['frames_skipped'] - st0['frames_skipped'])
    out('phase1_dropped_slow', st1['dropped_slow'])
    out('phase1_still_open', 1 - state['closed'])
    t0 = time.time()
    read_for(90, 2048)
    k.close()
    out('slow_closed_by_server', state['closed'])
    out('phase2_seconds', '%.1f' % (time.time() - t0))
    at_drop = fast.count
    deadline = time.time() + 20
    while time.time() < deadline and fast.count < at_drop + 10:
        time.sleep(0.1)
    out('fast_frames_after_drop', fast.count - at_drop)
    stop.set()
    st = get_json(url, '/stats')[1]
    for key in ('dropped_slow', 'dropped_stalled', 'frames_skipped', 'frames_rendered'):
        out(key, st[key])
    out('fast_errors', len(errors))
    fast.close()


def mode_drive(url, outdir):
    s = Stream(url, dict(id='d'))
    first = s.part()
    save(outdir + '/drive-first.png', first)
    j0 = get_json(url, '/state?id=d')[1]
    out('first_t', j0['t_ns'])
    out('driven', int(j0.get('driven', False)))
    out('play_status', control(url, 'd', 'play')[0])
    deadline = time.time() + 20
    j = j0
    while time.time() < deadline:
        j = get_json(url, '/state?id=d')[1]
        if j['t_ns'] != j0['t_ns'] and j['frame_t_ns'] == j['t_ns']:
            break
        time.sleep(0.1)
    out('moved_t', j['t_ns'])
    now = get_bytes(url, '/frame.png?id=d')
    got = part_until(s, lambda png: png == now, 60)
    out('moved_frame_seen', int(bool(got)))
    save(outdir + '/drive-moved.png', now)
    s.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == 'controls':
        mode_controls(args[0], args[1])
    elif mode == 'follow':
        mode_follow(args[0], args[1])
    elif mode == 'live':
        mode_live(args[0])
    elif mode == 'share':
        mode_share(args[0])
    elif mode == 'start':
        mode_start(args[0], args[1:])
    elif mode == 'crowd':
        mode_crowd(args[0], int(args[1]))
    elif mode == 'cap':
        mode_cap(args[0], int(args[1]))
    elif mode == 'rate':
        mode_rate(args[0], int(args[1]), float(args[2]))
    elif mode == 'lesson':
        mode_lesson(args[0], args[1])
    elif mode == 'full':
        mode_full(args[0], int(args[1]), int(args[2]))
    elif mode == 'badinput':
        mode_badinput(args[0])
    elif mode == 'slow':
        mode_slow(args[0])
    elif mode == 'drive':
        mode_drive(args[0], args[1])
    else:
        sys.exit('web_client.py: unknown mode ' + mode)


if __name__ == '__main__':
    main()
