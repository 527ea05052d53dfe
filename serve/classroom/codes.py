"""A class's join code (read aloud, typed from a projector) and the teacher's secret key."""

from __future__ import annotations

import re
import secrets

# No look-alikes: no 0/O, no 1/I/L. 31 letters and digits, 6 of them: about 8.9e8 codes, so a
# guessed code is a live one with odds of at most 200 in 8.9e8.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
CODE_PATTERN = re.compile(f"[{ALPHABET}]{{{CODE_LENGTH}}}")
# secrets.token_urlsafe(n) carries 8n bits: 24 bytes are 192 bits (at least 128 asked).
KEY_BYTES = 24
# The longest key accepted from a link: a token of KEY_BYTES is 32 characters.
KEY_MAX_LEN = 64
KEY_PATTERN = re.compile(f"[A-Za-z0-9_-]{{{KEY_BYTES * 4 // 3}}}")  # a key new_key made


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def normal_code(raw: str) -> str | None:
    """A code as typed (any case, spaces around) in its stored form; None if it cannot be one."""
    code = raw.strip().upper()
    return code if CODE_PATTERN.fullmatch(code) else None
