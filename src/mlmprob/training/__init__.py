"""MLM pretraining: a BERT-style ``transformers`` model trained on synthetic languages or text.

``train(TrainConfig(...), SyntheticSource(language) | TextSource(files), out_dir)`` writes a model
directory that ``mlmprob.load_mlm(out_dir)`` loads, with resumable safetensors checkpoints and a
loss curve. ``SymbolMLM`` views such a model in a synthetic language's own ids (mask = ``V``), so
the trained model and the exact language can be compared with the same algorithms.
"""

from .config import TrainConfig
from .data import SPECIALS, SYMBOL_OFFSET, SyntheticSource, TextSource, TokenData, symbol_tokenizer, train_wordpiece
from .loop import TrainResult, read_result, train
from .symbols import SymbolMLM

__all__ = ["TrainConfig", "SyntheticSource", "TextSource", "TokenData", "SPECIALS", "SYMBOL_OFFSET",
           "symbol_tokenizer", "train_wordpiece", "TrainResult", "read_result", "train", "SymbolMLM"]
