import os
import tempfile

# Keep the on-disk embedding cache of test runs out of the user's home.
os.environ.setdefault("BEHAVSIM_CACHE_DIR", tempfile.mkdtemp(prefix="behavsim-test-cache-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
