"""tiktoken's GPT-2 encoding, built from the gpt2.tiktoken file tandem reads
(tiktoken's own "gpt2" downloads its files, which a test must not), for the
tests and benches that check tandem's ids against tiktoken's."""
import os

import tiktoken
from tiktoken.load import load_tiktoken_bpe

# GPT-2's pre-tokenization pattern as tiktoken spells it for "gpt2".
PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
END_OF_TEXT = 50256


def default_tokenizer_dir():
    """Where apps/summarize looks, as env/tokenizer.sh puts the file there."""
    if os.environ.get("TANDEM_TOKENIZER_DIR"):
        return os.environ["TANDEM_TOKENIZER_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not cache.startswith("/"):  # XDG: a relative value is ignored
        cache = os.path.expanduser("~/.cache")
    return os.path.join(cache, "tandem", "gpt2")


def encoding(tokenizer_dir=None):
    ranks = load_tiktoken_bpe(os.path.join(tokenizer_dir or default_tokenizer_dir(), "gpt2.tiktoken"))
    return tiktoken.Encoding("gpt2-local", pat_str=PATTERN, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": END_OF_TEXT})
