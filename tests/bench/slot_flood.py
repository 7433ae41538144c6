#!/usr/bin/env python3
# Connection-slot flood (issue 39 item 6), a benchmark, not a test; loopback
# only and bounded (about 6 s). Silent sockets from 127.0.0.2..9, reopened as
# the server closes them, while a client on 127.0.0.1 sends 25 authenticated
# tools/list calls; prints how many succeeded, their median and max.
#
#   cloudflare-mcp --transport http --listen 127.0.0.1:PORT --tokens-file tokens.json &
#   python3 tests/bench/slot_flood.py 127.0.0.1:PORT CLIENT_TOKEN
import socket, sys, time, json, threading, urllib.request, tempfile
addr = sys.argv[1]; host, port = addr.split(':'); port = int(port)
token = sys.argv[2]
stop = False
held = []
opened = [0]
def flooder(src):
    socks = []
    while not stop:
        try:
            s = socket.socket(); s.bind((src, 0)); s.settimeout(2); s.connect((host, port)); s.setblocking(False)
            socks.append(s); opened[0] += 1
        except Exception:
            time.sleep(0.01)
        # drop the ones the server closed
        alive = []
        for s in socks:
            try:
                d = s.recv(1)
                s.close()
            except BlockingIOError:
                alive.append(s)
            except Exception:
                s.close()
        socks = alive
        time.sleep(0.005)
    for s in socks: s.close()
threads = [threading.Thread(target=flooder, args=(f"127.0.0.{i}",)) for i in range(2, 10)]
for t in threads: t.start()
time.sleep(3)
ok = 0; lat = []
body = json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/list"}).encode()
for i in range(25):
    t0 = time.time()
    req = urllib.request.Request(f"http://{addr}/mcp", data=body, headers={"Content-Type":"application/json","Accept":"application/json, text/event-stream","MCP-Protocol-Version":"2025-11-25","Authorization":f"Bearer {token}"})
    try:
        r = urllib.request.urlopen(req, timeout=10); r.read()
        if r.status == 200: ok += 1
    except Exception as e:
        print("fail", e)
    lat.append((time.time() - t0) * 1000)
    time.sleep(0.1)
stop = True
for t in threads: t.join()
lat.sort()
print(f"{ok}/25 tools/list succeeded; median {lat[12]:.1f} ms, max {lat[-1]:.1f} ms; {opened[0]} flood connections opened in {3+25*0.1:.0f}+ s")
