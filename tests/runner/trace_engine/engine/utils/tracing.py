import functools
import time

_TIMINGS: dict[str, float] = {}


def traced(name):
    def decorator(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            began = time.perf_counter()
            out = fn(*args, **kwargs)
            _TIMINGS[name] = _TIMINGS.get(name, 0.0) + time.perf_counter() - began
            return out

        return inner

    return decorator
