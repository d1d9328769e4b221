"""Examples that live beside the package and do not ship with it: the sample repository."""
