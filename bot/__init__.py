"""perfbot: performance review for GPU inference engines."""

__version__ = "0.1.0"
