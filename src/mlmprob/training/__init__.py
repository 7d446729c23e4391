"""MLM pretraining: a BERT-style ``transformers`` model trained on synthetic languages or text.

``train(TrainConfig(...), SyntheticSource(language) | TextSource(files), out_dir)`` writes a model
directory that ``mlmprob.load_mlm(out_dir)`` loads, with resumable safetensors checkpoints and a
loss curve. ``SymbolMLM`` views such a model in a synthetic language's own ids (mask = ``V``), so
the trained model and the exact language can be compared with the same algorithms.
"""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "TrainConfig": ".config",
        "SPECIALS": ".data",
        "SYMBOL_OFFSET": ".data",
        "SyntheticSource": ".data",
        "TextSource": ".data",
        "TokenData": ".data",
        "symbol_tokenizer": ".data",
        "train_wordpiece": ".data",
        "TrainResult": ".loop",
        "read_result": ".loop",
        "train": ".loop",
        "SymbolMLM": ".symbols",
    },
)
