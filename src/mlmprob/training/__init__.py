"""MLM pretraining: ``train(TrainConfig(...), SyntheticSource(language) | TextSource(files), out_dir)`` writes a BERT
model directory that ``mlmprob.load_mlm(out_dir)`` loads (resumable safetensors checkpoints, a loss curve).
``SymbolMLM`` views such a model in a synthetic language's own ids, to compare it with the exact language."""

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
