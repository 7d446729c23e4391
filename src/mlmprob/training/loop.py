"""The MLM pretraining loop: ``BertForMaskedLM`` + AdamW, resumable and deterministic in the seed.

Initial weights from ``torch.manual_seed(config.seed)`` inside ``fork_rng``; data order, masks and dropout from
generators seeded by ``derive_seed(config.seed, stream, step)``, so a resumed run equals an uninterrupted one."""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..jsonl import dumps
from .checkpoint import OPTIMIZER_FILE, STATE_FILE, latest_checkpoint, read_state, save_checkpoint, save_model_dir
from .config import TrainConfig
from .data import SYMBOL_OFFSET, TokenData
from .masking import corrupt, derive_seed, generator_for, select_positions, select_uniform

CURVE_FILE = "loss_curve.png"
LOCK_FILE = "train.lock"  # held by the process training into the directory
RANDOMNESS = "derive_seed(seed, stream, step): order/mask/dropout per step; init seed = seed"  # in the trainer state


@dataclass(frozen=True)
class TrainResult:
    """Where the run lives and how it ended. ``history`` holds one dict per evaluation."""

    out_dir: Path
    step: int
    done: bool
    resumed_from: int | None
    train_losses: tuple[float, ...]
    history: tuple[dict, ...]

    @property
    def final(self) -> dict:
        return self.history[-1] if self.history else {}


def build_model(config: TrainConfig, data: TokenData):
    """A freshly initialised ``BertForMaskedLM`` (weights seeded by ``config.seed``, global RNG restored)."""
    from transformers import BertConfig, BertForMaskedLM

    config.check_size(len(data.tokenizer), data.max_length)
    cfg: dict = dict(vocab_size=len(data.tokenizer), max_position_embeddings=data.max_length, pad_token_id=data.pad_id)
    cfg.update(hidden_size=config.hidden_size, intermediate_size=config.intermediate_size, type_vocab_size=1)
    cfg.update(num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads)
    cfg.update(hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return BertForMaskedLM(BertConfig(**cfg))


def _optimizer(model, config: TrainConfig) -> torch.optim.AdamW:
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, p in model.named_parameters():
        (no_decay if p.dim() < 2 or "LayerNorm" in name or "layernorm" in name.lower() else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, foreach=False)


class _Batches:
    """Example indices of step ``s``: positions ``s*B .. s*B+B-1`` of a stream of seeded epoch permutations."""

    def __init__(self, n: int, batch_size: int, seed: int):
        self.n, self.b, self.seed = n, batch_size, seed
        self._perms: dict[int, torch.Tensor] = {}

    def _perm(self, epoch: int) -> torch.Tensor:
        if epoch not in self._perms:
            self._perms = {epoch: torch.randperm(self.n, generator=generator_for(self.seed, "order", epoch))}
        return self._perms[epoch]

    def indices(self, step: int) -> torch.Tensor:
        pos = torch.arange(step * self.b, (step + 1) * self.b)
        epochs, offs = pos // self.n, pos % self.n
        return torch.stack([self._perm(int(e))[int(o)] for e, o in zip(epochs, offs, strict=True)])


def _trim(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop padding columns that every row of the batch has."""
    keep = (ids != pad_id).any(0).nonzero()
    return ids[:, : int(keep.max()) + 1] if len(keep) else ids


def _masks(config: TrainConfig, data: TokenData, ids: torch.Tensor, g: torch.Generator, uniform: bool = False):
    """``(inputs, labels)`` of ``ids`` corrupted at positions drawn from ``g`` (``uniform``: ``select_uniform``)."""
    maskable = data.maskable(ids)
    sel = select_uniform(maskable, g) if uniform else select_positions(maskable, config.mask_rate, g)
    return corrupt(ids, sel, config.mask_split, data.mask_id, data.replace_ids, g)


def _masked_lm_loss(model, inputs: torch.Tensor, labels: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mean cross-entropy at the labelled positions, with the LM head applied only there: ``BertForMaskedLM(...,
    labels=labels).loss`` without the ``[B, L, V]`` logits of the unlabelled positions (a small model's main cost)."""
    hidden = model.bert(input_ids=inputs, attention_mask=(inputs != pad_id).long())[0]
    sel = labels != -100
    logits = model.cls(hidden[sel])
    return torch.nn.functional.cross_entropy(logits.float(), labels[sel])


@torch.no_grad()
def _model_logits(model, ids: torch.Tensor, pad_id: int, device) -> torch.Tensor:
    ids = ids.to(device)
    return model(input_ids=ids, attention_mask=(ids != pad_id).long()).logits.float().cpu()


@torch.no_grad()
def heldout_metrics(model, config: TrainConfig, data: TokenData, heldout, device) -> dict:
    """Held-out masked-token cross-entropy; for synthetic data also the loss of the true conditionals
    at the same masked inputs (the floor, pure masking only) and the exact mean KL of the model's
    single-site conditionals (restricted to the ``V`` symbols) to the true ones."""
    model.eval()
    inputs, labels = heldout
    total, count = 0.0, 0
    for i in range(0, len(inputs), config.batch_size):
        x = _trim(inputs[i : i + config.batch_size], data.pad_id)
        y = labels[i : i + config.batch_size, : x.shape[1]]
        logp = torch.log_softmax(_model_logits(model, x, data.pad_id, device).double(), -1)
        sel = y != -100
        total -= float(logp[sel].gather(1, y[sel][:, None]).sum())
        count += int(sel.sum())
    out = {"heldout_loss": total / max(count, 1), "heldout_floor": None, "kl": None}
    if (lang := data.language) is not None:
        V, T = lang.vocab_size, lang.length
        sym = data.heldout_ids[:, 1:-1] - SYMBOL_OFFSET  # [M, T]
        if config.mask_split == (1.0, 0.0, 0.0):
            masked = inputs[:, 1:-1] == data.mask_id
            true = lang.conditionals(sym.masked_fill(masked, lang.mask_id))
            y = labels[:, 1:-1]
            sel = y != -100
            out["heldout_floor"] = float(-true[sel].gather(1, (y[sel] - SYMBOL_OFFSET)[:, None]).mean())
        n = min(config.kl_sequences, len(sym))
        if n:
            x = data.heldout_ids[:n]
            true = lang.conditionals(sym[:n])  # [n, T, V]: every position given all the others
            copies = x.repeat_interleave(T, 0)  # row r*T + t has symbol position t masked
            t_idx = torch.arange(T).repeat(n)
            copies[torch.arange(n * T), t_idx + 1] = data.mask_id
            parts = []
            for i in range(0, len(copies), config.batch_size * 4):
                c = copies[i : i + config.batch_size * 4]
                lg = _model_logits(model, c, data.pad_id, device)
                lg = lg[torch.arange(len(c)), t_idx[i : i + len(c)] + 1, SYMBOL_OFFSET : SYMBOL_OFFSET + V]
                parts.append(torch.log_softmax(lg.double(), -1))
            q = torch.cat(parts).reshape(n, T, V)
            out["kl"] = float((true.exp() * (true - q)).sum(-1).mean())
    model.train()
    return out


def _check_resume(saved: dict, config: TrainConfig, fingerprint: str, where: Path) -> None:
    old = saved.get("config", {})
    with suppress(MLMProbError, TypeError):  # fields added since the run was saved take their defaults
        old = TrainConfig.from_dict(old).to_dict()
    from ..runtime.config_check import check_config

    check_config(where, old or {"config": "none saved"}, config.to_dict())  # a run without one is refused too
    if saved.get("data_fingerprint") != fingerprint:
        raise MLMProbError(
            f"{where} holds a run on different data; use the same data to resume, or another output directory"
        )


def train(
    config: TrainConfig,
    source,
    out_dir,
    *,
    device="cpu",
    progress: bool = True,
    stop_after: int | None = None,
    resume: bool = True,
) -> TrainResult:
    """Pretrain a BERT masked LM on ``source`` (``SyntheticSource`` or ``TextSource``) into ``out_dir``.

    Writes checkpoints to ``out_dir/checkpoints/step-N`` every ``config.checkpoint_every`` steps and at the end; the
    final model, its tokenizer, ``trainer_state.json`` and ``loss_curve.png`` go to ``out_dir`` itself, so
    ``mlmprob.load_mlm(out_dir)`` loads the result. Calling ``train`` again on the same directory continues from the
    last checkpoint (``resume=False`` refuses instead). ``stop_after`` ends the call after that many steps in total,
    with a checkpoint (for time-boxed jobs); the schedule still runs to ``config.max_steps``. One process at a time:
    while a run holds ``out_dir/train.lock``, another ``train`` on the same directory is refused (``OutputLocked``)."""
    from ..runtime.lock import WriterLock

    out_dir = Path(out_dir)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with WriterLock(out_dir, lock_path=out_dir / LOCK_FILE):
            return _train(
                config, source, out_dir, device=device, progress=progress, stop_after=stop_after, resume=resume
            )
    except MLMProbError:
        if created and not any(out_dir.iterdir()):  # refused before anything was written: no empty folder left
            out_dir.rmdir()
        raise


def _model_and_state(config: TrainConfig, data, fingerprint, out_dir: Path, ckpt, dev):
    """``(model, optimizer, start step, resumed_from, train_losses, history)``: from the checkpoint ``ckpt``
    (checked against ``config`` and the data), or a fresh model when there is none."""
    if ckpt is None:
        model = build_model(config, data).to(dev)
        return model, _optimizer(model, config), 0, None, [], []
    from transformers import BertForMaskedLM

    from ..models.weights import check_safetensors, from_pretrained_checked
    from .checkpoint import load_optimizer_state

    saved = read_state(ckpt)
    _check_resume(saved, config, fingerprint, out_dir)
    check_safetensors([ckpt / "model.safetensors"])  # one line naming a bad weight file
    model = from_pretrained_checked(BertForMaskedLM, str(ckpt), str(ckpt), use_safetensors=True).to(dev)
    optimizer = _optimizer(model, config)
    state = load_optimizer_state(ckpt)  # outside the try: a refused pickle is its own one line
    try:
        optimizer.load_state_dict(state)
    except (ValueError, KeyError, TypeError, RuntimeError) as e:
        raise MLMProbError(
            f"{ckpt / OPTIMIZER_FILE} does not fit this model's optimizer ({e}); remove the "
            "checkpoint to resume from an earlier one, or train into another --out"
        ) from None
    step = int(saved["step"])
    return model, optimizer, step, step, list(saved["train_losses"]), list(saved["history"])


def _step_batch(config: TrainConfig, data, batches, static, step: int):
    """``(inputs, labels)`` of step ``step``: the static masks of its rows, or fresh ones from its ``mask`` stream."""
    idx = batches.indices(step)
    if static is not None:
        return static[0][idx], static[1][idx]
    g = generator_for(config.seed, "mask", step)
    return _masks(config, data, data.train_ids[idx], g, config.masking == "uniform")


def _train_step(config: TrainConfig, data, model, optimizer, inputs, labels, step: int, dev, fork_devices) -> float:
    """One optimiser step on ``(inputs, labels)`` (trimmed of all-padding columns), dropout drawn from the
    step's own ``dropout`` stream; returns the step's loss."""
    inputs = _trim(inputs, data.pad_id)
    labels = labels[:, : inputs.shape[1]].contiguous()
    for group in optimizer.param_groups:
        group["lr"] = config.lr_at(step)
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(derive_seed(config.seed, "dropout", step))
        inputs_d, labels_d = inputs.to(dev), labels.to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            loss_t = _masked_lm_loss(model, inputs_d, labels_d, data.pad_id)
        loss_t.backward()
    if config.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss_t.detach())


def _train(
    config: TrainConfig, source, out_dir: Path, *, device, progress: bool, stop_after: int | None, resume: bool
) -> TrainResult:
    from tqdm import tqdm

    dev = torch.device(device)
    data = source.build(out_dir, config.seed)
    fingerprint = data.fingerprint()
    ckpt = latest_checkpoint(out_dir)
    if ckpt is not None and not resume:
        raise MLMProbError(
            f"{out_dir} already holds a training run (last checkpoint {ckpt.name}); resume it or "
            f"choose another output directory"
        )

    model, optimizer, start, resumed_from, train_losses, history = _model_and_state(
        config, data, fingerprint, out_dir, ckpt, dev
    )

    batches = _Batches(len(data.train_ids), config.batch_size, config.seed)
    static = None
    if config.masking == "static":
        static = _masks(config, data, data.train_ids, generator_for(config.seed, "static-mask"))
    heldout = _masks(config, data, data.heldout_ids, generator_for(config.seed, "heldout-mask"))  # fixed masks
    end = config.max_steps if stop_after is None else min(config.max_steps, max(stop_after, start))

    def state(step: int) -> dict:
        run: dict = {"step": step, "max_steps": config.max_steps, "done": step >= config.max_steps}
        run.update(config=config.to_dict(), data=data.description, data_fingerprint=fingerprint, randomness=RANDOMNESS)
        return {**run, "train_losses": train_losses, "history": history}

    fork_devices = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
    model.train()
    bar = tqdm(total=config.max_steps, initial=start, disable=not progress, desc="train", unit="step")
    t0 = time.time()
    for step in range(start, end):
        inputs, labels = _step_batch(config, data, batches, static, step)
        loss = _train_step(config, data, model, optimizer, inputs, labels, step, dev, fork_devices)
        train_losses.append(loss)
        done = step + 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")
        if done % config.eval_every == 0 or done == config.max_steps:
            since = train_losses[-config.eval_every :]
            rec = {"step": done, "lr": config.lr_at(step), "train_loss": sum(since) / len(since)}
            rec.update(heldout_metrics(model, config, data, heldout, dev), elapsed_s=round(time.time() - t0, 2))
            history.append(rec)
            bar.write(dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in rec.items()}))
        if done % config.checkpoint_every == 0 or done == end:
            save_checkpoint(out_dir, done, model, data.tokenizer, optimizer, state(done), config.keep_checkpoints)
    bar.close()

    step = max(end, start)
    if step >= config.max_steps:
        save_model_dir(out_dir, model, data.tokenizer, state(step))
        try:
            from .plots import plot_loss_curve

            plot_loss_curve(train_losses, history, out_dir / CURVE_FILE, title=f"MLM pretraining, {out_dir.name}")
        except ImportError:  # pragma: no cover - matplotlib is a dependency; the run itself is saved
            pass
    return TrainResult(out_dir, step, step >= config.max_steps, resumed_from, tuple(train_losses), tuple(history))


def read_result(out_dir) -> TrainResult:
    """The ``TrainResult`` of a finished (or checkpointed) run directory, without training."""
    out_dir = Path(out_dir)
    where = out_dir if (out_dir / STATE_FILE).is_file() else latest_checkpoint(out_dir)
    if where is None:
        raise MLMProbError(f"{out_dir} holds no training run")
    s = read_state(where)
    return TrainResult(out_dir, int(s["step"]), bool(s["done"]), None, tuple(s["train_losses"]), tuple(s["history"]))
