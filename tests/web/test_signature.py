"""X-Hub-Signature-256 verification: GitHub's published test vector, rotation, tampering."""

from hypothesis import given
from hypothesis import strategies as st

from bot.web.signature import is_well_formed, sign, verify

GITHUB_VECTOR = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_documented_test_vector_verifies():
    assert sign("It's a Secret to Everybody", b"Hello, World!") == GITHUB_VECTOR
    assert verify(GITHUB_VECTOR, b"Hello, World!", ["It's a Secret to Everybody"])


def test_any_of_several_secrets_verifies_during_rotation():
    assert verify(GITHUB_VECTOR, b"Hello, World!", ["new secret", "It's a Secret to Everybody"])
    assert not verify(GITHUB_VECTOR, b"Hello, World!", ["new secret"])


def test_malformed_headers_never_verify():
    for header in (
        None,
        "",
        "sha1=" + "0" * 40,
        GITHUB_VECTOR.upper(),
        GITHUB_VECTOR[:-1],
        GITHUB_VECTOR + "0",
        "sha256=" + "g" * 64,
    ):
        assert not is_well_formed(header)
        assert not verify(header, b"Hello, World!", ["It's a Secret to Everybody"])


@given(st.binary(max_size=2000), st.text(min_size=1, max_size=40), st.integers(min_value=0))
def test_a_body_changed_after_signing_never_verifies(body, secret, position):
    header = sign(secret, body)
    assert verify(header, body, [secret])
    changed = bytearray(body or b"\x00")
    changed[position % len(changed)] ^= 0x01
    assert not verify(header, bytes(changed) if body else body + b"x", [secret])
