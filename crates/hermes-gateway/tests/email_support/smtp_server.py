"""A real SMTP server for the email adapter tests: aiosmtpd on loopback with STARTTLS or
implicit TLS and AUTH PLAIN/LOGIN for one user; every accepted message is written to
<out>/<n>.eml with its envelope in <n>.json. Prints READY when listening; runs until killed."""
import argparse
import json
import os
import signal
import ssl
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--mode", choices=["starttls", "tls"], required=True)
ap.add_argument("--cert", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--user", required=True)
ap.add_argument("--password", required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()

lock = threading.Lock()
count = [0]


class Handler:
    async def handle_DATA(self, server, session, envelope):
        with lock:
            count[0] += 1
            n = count[0]
        base = os.path.join(args.out, f"{n:04}")
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content)
        with open(base + ".json", "w") as f:
            json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                       "authenticated": bool(session.authenticated),
                       "tls": args.mode == "tls" or session.ssl is not None}, f)
        os.rename(base + ".eml.tmp", base + ".eml")
        return "250 OK"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == args.user
          and auth_data.password.decode() == args.password)
    return AuthResult(success=ok, handled=False)


ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(args.cert, args.key)
common = dict(authenticator=authenticator, auth_required=True)
if args.mode == "tls":
    # The whole connection is TLS; aiosmtpd's auth_require_tls only knows STARTTLS.
    controller = Controller(Handler(), hostname="127.0.0.1", port=args.port, ssl_context=ctx,
                            server_hostname="localhost", auth_require_tls=False, **common)
else:
    controller = Controller(Handler(), hostname="127.0.0.1", port=args.port, tls_context=ctx,
                            require_starttls=True, auth_require_tls=True, **common)
controller.start()
print("READY", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
controller.stop()
