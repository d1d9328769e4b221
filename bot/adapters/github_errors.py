"""GitHub's failures as the service's kinds (`bot.service.failures`), each decided here once: what
each HTTP status GitHub answers means (`Answer`), what a 401 means for whose credentials it refused
(`_unauthorized`), and the block every request to GitHub runs in (`translating`):

- transient: 408, 429 and 5xx, PyGithub's rate limits (with the wait), timeouts and broken
  connections, the client's retries run out, an installation token refused once (a new one is
  asked for);
- permanent: no or refused credentials, 404 and 410 (`Gone`), a request GitHub will always refuse
  (400, 403, 422);
- anything else is left as it is (a bug).

A request that knows better says so before the block sees the error (a 404 that means "no such
file", a 409 that means "finished already")."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

import requests
from github import GithubException, RateLimitExceededException
from github.GithubException import RateLimitExceededExceedsMaxWait

from bot.service.failures import BadCredentials, Gone, Permanent, Transient


class Answer(Enum):
    """What an HTTP status from GitHub says, whichever request it answered (`answer`)."""

    MALFORMED = "the request could not be read"  # 400
    UNAUTHORIZED = "the credentials were refused"  # 401: what that means depends on whose
    # 403; a rate limit's 403 is told apart by PyGithub from its message (RateLimitExceededException)
    FORBIDDEN = "no permission"
    NOT_FOUND = "no such thing, or not visible to these credentials"  # 404
    NOT_ACCEPTABLE = "not available in the media type asked for"  # 406: a diff too large, say
    CONFLICT = "not in a state that allows it"  # 409: a run that finished already, say
    GONE = "removed for good"  # 410
    INVALID = "the request's content was refused"  # 422: "Validation Failed", a diff too large
    BUSY = "busy or down: worth asking again later"  # 408, 429, 5xx


_ANSWERS = {
    400: Answer.MALFORMED,
    401: Answer.UNAUTHORIZED,
    403: Answer.FORBIDDEN,
    404: Answer.NOT_FOUND,
    406: Answer.NOT_ACCEPTABLE,
    408: Answer.BUSY,
    409: Answer.CONFLICT,
    410: Answer.GONE,
    422: Answer.INVALID,
    429: Answer.BUSY,
}

_MISSING = frozenset({Answer.NOT_FOUND, Answer.GONE})  # a `Gone`
_REFUSED = frozenset({Answer.MALFORMED, Answer.FORBIDDEN, Answer.INVALID})  # asked again, the same answer


def answer(error: BaseException) -> Answer | None:
    """What GitHub said with ``error``'s status; None when it is no answer of GitHub's, or an
    answer no request of perfbot's expects."""
    if not isinstance(error, GithubException):
        return None
    return Answer.BUSY if error.status >= 500 else _ANSWERS.get(error.status)


# Whose credentials a request carried: the App's own (its id and key sign a JWT), an installation
# token of the App, or the token of PERFBOT_GITHUB_TOKEN.
BY_APP = "the App's credentials"
BY_INSTALLATION = "the App's installation token"
BY_PERSONAL = "PERFBOT_GITHUB_TOKEN"


def _never() -> bool:
    return False


Renew = Callable[[], bool]  # drops a refused token; True when the next attempt asks for a new one


def _unauthorized(error: GithubException, what: str, whose: str, renew: Renew = _never) -> Exception:
    """What GitHub's 401 to ``whose`` credentials means. An installation token may have expired or
    been revoked early: ``renew`` drops it and says whether the next attempt will ask for a new one
    (a transient failure); otherwise the credentials are refused for good."""
    if whose == BY_APP:
        return BadCredentials(
            f"GitHub refused {whose} (401 {_message(error)}): check PERFBOT_APP_ID and PERFBOT_PRIVATE_KEY"
        )
    if renew():
        return Transient(f"GitHub refused the installation token ({what}: 401); a new one is asked for")
    return BadCredentials(f"GitHub refused {whose} ({what}: 401 {_message(error)})")


def translated(error: Exception, what: str, whose: str, renew: Renew = _never) -> Exception | None:
    """The service's kind of a PyGithub or requests error met while doing ``what`` with ``whose``
    credentials; None for one that is neither permanent nor transient (a bug: left as it is)."""
    if isinstance(error, RateLimitExceededException):
        wait = error.wait if isinstance(error, RateLimitExceededExceedsMaxWait) else None
        wait = wait or _retry_after(error.headers) or 60.0
        return Transient(f"GitHub's rate limit ({what}): waiting {wait:.0f} s", retry_after=wait)
    if isinstance(error, GithubException):
        said = answer(error)
        if said is Answer.UNAUTHORIZED:
            return _unauthorized(error, what, whose, renew)
        if said is Answer.BUSY:
            return Transient(
                f"GitHub answered {error.status} ({what}): {_message(error)}",
                retry_after=_retry_after(error.headers),
            )
        if said in _MISSING:
            return Gone(f"GitHub answered {error.status} ({what}): {_message(error)}")
        if said in _REFUSED:
            return Permanent(
                f"GitHub refused ({what}): {error.status} {_message(error)}",
                hint=f"GitHub answered {error.status}; asked again it would answer the same",
            )
        return None
    if isinstance(error, requests.exceptions.RetryError):
        return Transient(f"GitHub kept failing ({what}); the client's retries ran out")
    if isinstance(error, requests.RequestException):
        return Transient(f"GitHub could not be reached ({what}): {type(error).__name__}")
    return None


@contextmanager
def translating(what: str, whose: str, renew: Renew = _never) -> Iterator[None]:
    """Run a request to GitHub: its PyGithub and requests errors leave the block as the service's
    kinds (`translated`); any other error, and a failure the service already names, as it is."""
    try:
        yield
    except (GithubException, requests.RequestException) as error:
        kind = translated(error, what, whose, renew)
        if kind is None:
            raise
        raise kind from error


def _message(error: GithubException) -> str:
    data = error.data
    message = data.get("message") if isinstance(data, dict) else data
    return " ".join(str(message or "").split())[:200]


def _retry_after(headers: Any) -> float | None:
    """Seconds GitHub asked us to wait: Retry-After, else the rate limit's reset time."""
    found = {str(k).lower(): v for k, v in (headers or {}).items()}
    try:
        if "retry-after" in found:
            return max(0.0, float(found["retry-after"]))
        if found.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in found:
            return max(0.0, float(found["x-ratelimit-reset"]) - time.time())
    except ValueError:
        return None
    return None
