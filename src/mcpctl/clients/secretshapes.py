"""Where the literal secrets sit in a client's values, found by their shape.

A token that looks like a token (`ghp_…`, `sk-…`, a long random string) is the easy case
(`resources.secrets.looks_like_secret`). Most secrets in client files have no such look and are
known by where they sit: the password of a URL (`postgresql://user:pw@host/db`), a secret query
parameter (`?api_key=…`), the path of a webhook (`hooks.slack.com/services/T/B/XXXX`), the value
after `--password`, a header such as `Cookie`, an environment variable named `DB_PASSWORD` however
short its value. `secret_spans` returns those places as spans of the value, so the mover can
replace each by a `${file:…}` reference inside the string: the resolver substitutes references
anywhere in a value, so the gateway rebuilds the exact original string.

Pure functions, no I/O; `secretfile` moves what these find.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from mcpctl.resources.kinds import SECRET_REF_RE
from mcpctl.resources.secrets import looks_like_secret

# Words of a name (env key, header, query parameter, flag) that say its value is a secret.
_SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "key", "apikey",
    "credential", "credentials", "creds", "pat", "auth", "authorization", "cookie", "sig", "signature",
    "private", "privatekey", "bearer", "jwt",
})
_SECRET_ENDINGS = ("token", "password", "passwd", "secret", "apikey")     # GITHUBTOKEN, dbPassword
# A last word that describes the secret rather than being it: TOKEN_URL, PASSWORD_FILE, AUTH_TYPE.
_DESCRIPTORS = frozenset({
    "url", "uri", "endpoint", "host", "hostname", "port", "file", "path", "dir", "directory", "type", "mode",
    "enabled", "enable", "disabled", "method", "header", "name", "user", "username", "id", "scheme", "scope",
    "scopes", "expiry", "expires", "ttl", "timeout", "length", "len", "env", "var", "stdin", "location",
    "region", "format", "algorithm", "alg", "version", "provider", "helper", "command", "cmd", "prefix",
    "required", "optional", "limit", "max", "min", "count", "size", "interval", "retries", "level", "audience",
    "issuer", "kind", "cache",
})
_SWITCH_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})
# A first word that makes a flag a switch, not one taking a secret: --no-auth, --with-token (stdin).
_SWITCH_PREFIXES = frozenset({"no", "use", "with", "enable", "disable", "require", "skip", "allow", "ask", "prompt"})

# Hosts whose URL path, after the prefix, is the credential (incoming webhooks, bot tokens).
_WEBHOOKS: dict[str, tuple[str, ...]] = {
    "hooks.slack.com": ("/services/", "/triggers/", "/workflows/"),
    "hooks.slack-gov.com": ("/services/", "/triggers/", "/workflows/"),
    "discord.com": ("/api/webhooks/",),
    "discordapp.com": ("/api/webhooks/",),
    "ptb.discord.com": ("/api/webhooks/",),
    "canary.discord.com": ("/api/webhooks/",),
    "api.telegram.org": ("/bot", "/file/bot"),
    "outlook.office.com": ("/webhook/", "/webhookb2/"),
    "hooks.zapier.com": ("/hooks/catch/",),
    "maker.ifttt.com": ("/trigger/",),
}
_WEBHOOK_SUFFIXES: dict[str, tuple[str, ...]] = {".webhook.office.com": ("/webhookb2/",)}
# Webhook paths by their shape, on any host (a proxy, GovSlack, a self-hosted chat): Slack's
# `/services/T…/B…/<secret>`; Mattermost's and Rocket.Chat's `/hooks/<long id>[/<token>]`; and the
# whole path on a host named `hooks.*`.
_SLACK_PATH = re.compile(r"^(/services/)T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9_-]+")
_HOOKS_PATH = re.compile(r"^(.*?/hooks/)[A-Za-z0-9_-]{16,}(?:/[A-Za-z0-9_-]+)?/?$")

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_SCHEME = re.compile(r"^(Bearer|Basic|Token|Bot|Digest)(\s+)(\S.*)$", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ENV_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", re.S)
_LONG_FLAG = re.compile(r"^--([A-Za-z0-9][\w.-]*)$")
_LONG_FLAG_VALUE = re.compile(r"^(--[A-Za-z0-9][\w.-]*)=(.+)$", re.S)


@dataclass(frozen=True)
class Span:
    """A secret part of a value: `value[start:end]`; `part` names it ('' for the whole value)."""

    start: int
    end: int
    part: str = ""


def words(name: str) -> list[str]:
    """`DB_PASSWORD` -> [db, password]; `githubToken` -> [github, token]; `X-Api-Key` -> [x, api, key]."""
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", name)) if w]


def secret_name(name: str) -> bool:
    """Whether a name (env key, header, query parameter, flag without dashes) says its value is a secret."""
    ws = words(name)
    if not ws or ws[-1] in _DESCRIPTORS:
        return False
    return any(w in _SECRET_WORDS for w in ws) or ws[-1].endswith(_SECRET_ENDINGS)


def _is_path(value: str) -> bool:
    return value.startswith(("/", "~", "./", "../"))


def _literal(value: str) -> bool:
    return bool(value.strip()) and not SECRET_REF_RE.search(value)


def _whole(value: str) -> list[Span]:
    """The whole value (its surrounding blanks left out), or only the credential after an
    authorization scheme (`Bearer X`: X)."""
    start = len(value) - len(value.lstrip())
    end = len(value.rstrip())
    m = _SCHEME.match(value[start:end])
    if m:
        start += len(m.group(1)) + len(m.group(2))
    return [Span(start, end)] if end > start else []


def _url_spans(url: str, offset: int) -> list[Span]:
    """The secret parts of one URL: the userinfo's password (or a user that is a token), secret
    query parameters, and the path of a known webhook host."""
    spans: list[Span] = []
    auth_start = url.index("://") + 3
    auth_end = min([i for i in (url.find(c, auth_start) for c in "/?#") if i >= 0] or [len(url)])
    authority = url[auth_start:auth_end]
    if "@" in authority:
        userinfo = authority.rsplit("@", 1)[0]
        user, colon, password = userinfo.partition(":")
        if colon and password and _literal(password):
            start = auth_start + len(user) + 1
            spans.append(Span(offset + start, offset + start + len(password), "password"))
        elif not colon and looks_like_secret("", unquote(user)):
            spans.append(Span(offset + auth_start, offset + auth_start + len(user), "user"))
        host = authority.rsplit("@", 1)[1]
    else:
        host = authority
    host = host.rsplit(":", 1)[0].lower() if not host.startswith("[") else host.lower()
    path_end = min([i for i in (url.find(c, auth_end) for c in "?#") if i >= 0] or [len(url)])
    path = url[auth_end:path_end]
    prefix = _webhook_prefix(host, path)
    if prefix is not None and len(path) > len(prefix) and _literal(path[len(prefix):]):
        spans.append(Span(offset + auth_end + len(prefix), offset + path_end, "path"))
    if path_end < len(url) and url[path_end] == "?":
        q_end = url.find("#", path_end)
        pos = path_end + 1
        for pair in url[pos:q_end if q_end >= 0 else len(url)].split("&"):
            key, eq, val = pair.partition("=")
            if eq and val and _literal(val) and (secret_name(unquote(key)) or looks_like_secret("", unquote(val))):
                start = pos + len(key) + 1
                spans.append(Span(offset + start, offset + start + len(val), re.sub(r"\W+", "_", unquote(key))))
            pos += len(pair) + 1
    return spans


def _webhook_prefix(host: str, path: str) -> str | None:
    """The part of a webhook URL's path before its secret (None: not a webhook): a known host's
    prefix, else a webhook path's shape, else the first segment on a host named `hooks.*`."""
    prefixes = _WEBHOOKS.get(host) or next((p for s, p in _WEBHOOK_SUFFIXES.items() if host.endswith(s)), ())
    known = next((p for p in prefixes if path.startswith(p)), None)
    if known is not None or prefixes:
        return known
    shaped = _SLACK_PATH.match(path) or _HOOKS_PATH.match(path)
    if shaped is not None:
        return shaped.group(1)
    if host.startswith("hooks.") and path.count("/") >= 2:
        return path[:path.index("/", 1) + 1]
    return None


def url_spans(value: str) -> list[Span]:
    """The secret parts of every URL in `value`."""
    return [s for m in _URL.finditer(value) for s in _url_spans(m.group(0), m.start())]


def has_url(value: str) -> bool:
    return bool(_URL.search(value))


def value_spans(name: str, value: str, *, by_name: bool = True) -> list[Span]:
    """A value under `name` (an env key, a header, a flag): URLs by their parts; a path is no
    secret; a secret name makes the whole value secret (whatever its length); otherwise only a
    value that looks like a token is."""
    if not _literal(value):
        return []
    if has_url(value):
        return url_spans(value)
    if _is_path(value.strip()):
        return []
    if by_name and secret_name(name):
        return [] if value.strip().lower() in _SWITCH_VALUES else _whole(value)
    return _whole(value) if looks_like_secret(name, value) else []


def arg_spans(args: Sequence[str]) -> list[list[Span]]:
    """The secret spans of each argument: `--password X` (the X), `--token=X`, `NAME=VALUE` with a
    secret NAME (docker's `-e`), URLs with credentials, and arguments that look like tokens."""
    out: list[list[Span]] = [[] for _ in args]
    for i, arg in enumerate(args):
        if out[i]:
            continue
        flag = _LONG_FLAG.match(arg)
        if flag and i + 1 < len(args) and _takes_secret(flag.group(1)):
            nxt = args[i + 1]
            if not nxt.startswith("-"):
                out[i + 1] = value_spans(flag.group(1), nxt)
            continue
        m = _LONG_FLAG_VALUE.match(arg) or _ENV_PAIR.match(arg)
        if m:
            head = len(m.group(1)) + 1
            name = m.group(1).lstrip("-")
            by_name = _takes_secret(name) if arg.startswith("--") else True
            out[i] = [Span(s.start + head, s.end + head, s.part)
                      for s in value_spans(name, m.group(2), by_name=by_name)]
            continue
        out[i] = value_spans("", arg, by_name=False)
    return out


def _takes_secret(flag: str) -> bool:
    ws = words(flag)
    return bool(ws) and ws[0] not in _SWITCH_PREFIXES and secret_name(flag)
