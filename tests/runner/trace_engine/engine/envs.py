import os

ENGINE_CHECK_FINITE = os.environ.get("ENGINE_CHECK_FINITE", "0") == "1"
