"""The model zoo: small Hugging Face ``transformers`` models with random weights.

A model file (the format ``opgen-backend test --model`` reads; see the runner's
README): ``CASES`` maps a case name to a builder that takes no arguments and
returns ``{"module", "inputs", "kwargs", "loss"?, "optimizer"?}``. Each case is
one architecture, made tiny (hidden size 32, 2 layers or stages (resnet: 4 of one block), a vocabulary of 128,
sequences of 12 tokens, batch 2, 32x32 images, 400-sample audio clips) so that
its forward and backward take well under 2 s on one CPU core. Weights are the
model's own random initialization (the runner seeds torch before each builder);
nothing is downloaded: every model is built from an explicit config class
(``LlamaConfig(...)`` then ``LlamaForCausalLM(config)``), never
``from_pretrained`` or the hub. Every dropout, drop-path, layer-drop and
SpecAugment masking probability is 0.0 and MoE router jitter is off, so a
training-mode step is deterministic. Each case names its attention
implementation (``eager`` or ``sdpa``) in ``ATTENTION``; sdpa cases take
``scaled_dot_product_attention``, which eager CPU runs as a fused kernel and a
device may run as another path.

Run it with::

    opgen-backend test <project> --model zoo            # every case
    opgen-backend test <project> --model zoo:llama,bert # some of them ('*' globs)

``transformers`` is a test and optional dependency (pinned in
requirements-dev.txt: ``transformers==5.24.0``); nothing in gen/init/build or a
device wheel needs it. Importing this file does not import it, so ``CASES``
lists the names without it; a builder raises an ImportError that says
``pip install transformers==5.24.0``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

TRANSFORMERS_VERSION = "5.24.0"

BATCH = 2
SEQ = 12
VOCAB = 128
IMAGE = 32
AUDIO = 400  # samples; the feature extractor below makes 39 frames of them

# Substrings of config keys that are stochastic in training mode: dropout
# probabilities, stochastic depth, LayerDrop, SpecAugment masking.
_STOCHASTIC_KEYS = ("dropout", "pdrop", "drop_prob", "drop_path", "layerdrop", "mask_time_prob", "mask_feature_prob")

# The attention implementation each case asks for (a convnet or an SSM has none).
ATTENTION: dict[str, str] = {}


def _transformers():
    try:
        return importlib.import_module("transformers")
    except ImportError as e:
        raise ImportError(
            "the model zoo builds its models with Hugging Face transformers, which is not installed: "
            f"pip install transformers=={TRANSFORMERS_VERSION}  (a test/optional dependency; see requirements-dev.txt)"
        ) from e


def _torch():
    return importlib.import_module("torch")


def _no_dropout(config) -> None:
    """Zero every stochastic probability of config and its sub-configs."""
    for key, value in list(vars(config).items()):
        if any(s in key for s in _STOCHASTIC_KEYS) and isinstance(value, (int, float)) and not isinstance(value, bool):
            setattr(config, key, 0.0)
        elif hasattr(value, "to_dict") and hasattr(value, "model_type"):
            _no_dropout(value)


def _build(config_cls: str, model_cls: str, attention: str | None = None, **config_kwargs):
    tf = _transformers()
    if attention is not None:
        config_kwargs["attn_implementation"] = attention
    config = getattr(tf, config_cls)(**config_kwargs)
    _no_dropout(config)
    model = getattr(tf, model_cls)(config)
    torch = _torch()
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.dropout._DropoutNd) and mod.p != 0.0:
            raise RuntimeError(f"{model_cls}: a dropout with p={mod.p} is left on; zero its config key")
    if attention is not None and model.config._attn_implementation != attention:
        raise RuntimeError(f"{model_cls}: asked for attn_implementation={attention!r}, got {model.config._attn_implementation!r}")
    return model


def _ids(*shape: int, high: int = VOCAB, low: int = 0):
    return _torch().randint(low, high, shape)


def _loss(out):
    return out.loss


CASES: dict[str, Callable[[], dict[str, Any]]] = {}


def case(name: str, attention: str | None = None):
    def register(fn):
        CASES[name] = fn
        if attention is not None:
            ATTENTION[name] = attention
        return fn

    return register


def _causal_lm(config_cls: str, model_cls: str, attention: str, **kw) -> dict[str, Any]:
    kw.setdefault("use_cache", False)
    model = _build(config_cls, model_cls, attention, vocab_size=VOCAB, **kw)
    ids = _ids(BATCH, SEQ)
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": ids.clone()}, "loss": _loss}


_DEC = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 64}

# ---------------------------------------------------------------- decoder LMs


@case("gpt2", "eager")
def gpt2():
    """Learned absolute positions, Conv1D projections, GELU (tanh)."""
    return _causal_lm("GPT2Config", "GPT2LMHeadModel", "eager", n_positions=32, n_embd=32, n_layer=2, n_head=4, n_inner=64)


@case("opt", "sdpa")
def opt():
    """Learned positions with OPT's offset of 2, ReLU MLP."""
    return _causal_lm(
        "OPTConfig", "OPTForCausalLM", "sdpa", hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=32, word_embed_proj_dim=32,
    )


@case("llama", "eager")
def llama():
    """Rotary embeddings, grouped-query attention (4 query heads, 2 key/value heads), RMS norm, SwiGLU; one AdamW step."""
    c = _causal_lm("LlamaConfig", "LlamaForCausalLM", "eager", num_key_value_heads=2, **_DEC)
    c["optimizer"] = lambda params: _torch().optim.AdamW(params, lr=1e-3)
    return c


@case("llama_sdpa", "sdpa")
def llama_sdpa():
    """llama through scaled_dot_product_attention with GQA, and tied embeddings."""
    return _causal_lm("LlamaConfig", "LlamaForCausalLM", "sdpa", num_key_value_heads=2, tie_word_embeddings=True, **_DEC)


@case("qwen2", "sdpa")
def qwen2():
    """Rotary, GQA, bias on the q/k/v projections."""
    return _causal_lm("Qwen2Config", "Qwen2ForCausalLM", "sdpa", num_key_value_heads=2, **_DEC)


@case("qwen3", "eager")
def qwen3():
    """Rotary, GQA, RMS norm on queries and keys (q_norm/k_norm), explicit head_dim."""
    return _causal_lm("Qwen3Config", "Qwen3ForCausalLM", "eager", num_key_value_heads=2, head_dim=8, **_DEC)


@case("mistral", "eager")
def mistral():
    """Rotary, multi-query attention (1 key/value head), a sliding window (8) shorter than the sequence."""
    return _causal_lm("MistralConfig", "MistralForCausalLM", "eager", num_key_value_heads=1, sliding_window=8, **_DEC)


@case("phi", "eager")
def phi():
    """Partial rotary (half of each head), parallel attention and MLP, LayerNorm, GELU (new)."""
    return _causal_lm("PhiConfig", "PhiForCausalLM", "eager", num_key_value_heads=4, partial_rotary_factor=0.5, **_DEC)


@case("gemma", "eager")
def gemma():
    """Rotary, MQA, GELU (tanh) gating, (1 + weight) RMS norm, scaled embeddings, tied LM head."""
    return _causal_lm("GemmaConfig", "GemmaForCausalLM", "eager", num_key_value_heads=1, head_dim=8, **_DEC)


@case("gpt_neox", "sdpa")
def gpt_neox():
    """Rotary on a quarter of each head, fused qkv, parallel residual."""
    return _causal_lm("GPTNeoXConfig", "GPTNeoXForCausalLM", "sdpa", rotary_pct=0.25, **_DEC)


@case("bloom", "eager")
def bloom():
    """ALiBi position biases (baddbmm), fused qkv, embedding LayerNorm."""
    return _causal_lm("BloomConfig", "BloomForCausalLM", "eager", hidden_size=32, n_layer=2, n_head=4)


# ------------------------------------------------------ mixture of experts


@case("mixtral", "eager")
def mixtral():
    """Top-2 of 4 experts, GQA, sliding window, router logits and the load-balancing auxiliary loss (histc)."""
    return _causal_lm(
        "MixtralConfig", "MixtralForCausalLM", "eager", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
        output_router_logits=True, router_jitter_noise=0.0, router_aux_loss_coef=0.01, experts_implementation="eager", **_DEC,
    )


@case("qwen2_moe", "sdpa")
def qwen2_moe():
    """Top-2 of 4 experts plus a gated shared expert, GQA."""
    return _causal_lm(
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM", "sdpa", num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=64, output_router_logits=True,
        experts_implementation="eager", **_DEC,
    )


# --------------------------------------------------------- state space


@case("mamba")
def mamba():
    """Selective state-space model. Without the mamba_ssm/causal_conv1d CUDA kernels (not installed, and never used
    off CUDA) transformers takes its torch-only path: depthwise causal conv1d, softplus, and a sequential scan."""
    model = _build(
        "MambaConfig", "MambaForCausalLM", vocab_size=VOCAB, hidden_size=32, state_size=8, num_hidden_layers=2,
        expand=2, conv_kernel=4, use_mambapy=False, use_cache=False,
    )
    ids = _ids(BATCH, SEQ)
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": ids.clone()}, "loss": _loss}


# ------------------------------------------------------------- encoders

_ENC = {"vocab_size": VOCAB, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64}


def _mlm(config_cls: str, model_cls: str, attention: str, **kw) -> dict[str, Any]:
    model = _build(config_cls, model_cls, attention, **{**_ENC, **kw})
    ids = _ids(BATCH, SEQ, low=3)
    labels = _ids(BATCH, SEQ, low=3)
    labels[:, ::3] = -100  # positions the MLM loss ignores
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": labels}, "loss": _loss}


@case("bert", "eager")
def bert():
    """Sequence classification (3 classes) with token types and an attention mask with padding; one AdamW step."""
    model = _build("BertConfig", "BertForSequenceClassification", "eager", num_labels=3, **_ENC)
    ids = _ids(BATCH, SEQ)
    mask = _torch().ones(BATCH, SEQ, dtype=_torch().long)
    mask[1, SEQ - 4 :] = 0
    types = _torch().zeros(BATCH, SEQ, dtype=_torch().long)
    types[:, SEQ // 2 :] = 1
    return {
        "module": model,
        "inputs": (ids,),
        "kwargs": {"attention_mask": mask, "token_type_ids": types, "labels": _ids(BATCH, high=3)},
        "loss": _loss,
        "optimizer": lambda params: _torch().optim.AdamW(params, lr=1e-3),
    }


@case("roberta", "sdpa")
def roberta():
    """Masked LM; positions counted from the padding index."""
    return _mlm("RobertaConfig", "RobertaForMaskedLM", "sdpa")


@case("albert", "eager")
def albert():
    """Masked LM with a factorized embedding (16 -> 32) and one layer's weights shared by both layers."""
    return _mlm("AlbertConfig", "AlbertForMaskedLM", "eager", embedding_size=16)


@case("electra", "eager")
def electra():
    """Replaced-token detection discriminator: per-token binary cross-entropy with logits."""
    model = _build("ElectraConfig", "ElectraForPreTraining", "eager", embedding_size=16, **_ENC)
    ids = _ids(BATCH, SEQ)
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": _ids(BATCH, SEQ, high=2)}, "loss": _loss}


@case("deberta_v2", "eager")
def deberta_v2():
    """Disentangled attention (content-to-position and position-to-content, log buckets), token classification."""
    model = _build(
        "DebertaV2Config", "DebertaV2ForTokenClassification", "eager", num_labels=5, relative_attention=True,
        pos_att_type=["p2c", "c2p"], position_buckets=8, max_relative_positions=16, position_biased_input=False,
        **_ENC,
    )
    ids = _ids(BATCH, SEQ)
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": _ids(BATCH, SEQ, high=5)}, "loss": _loss}


@case("distilbert", "sdpa")
def distilbert():
    """Question answering head (start/end logits and their cross-entropy)."""
    model = _build(
        "DistilBertConfig", "DistilBertForQuestionAnswering", "sdpa", vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4,
        hidden_dim=64, max_position_embeddings=64,
    )
    ids = _ids(BATCH, SEQ)
    return {
        "module": model,
        "inputs": (ids,),
        "kwargs": {"start_positions": _ids(BATCH, high=SEQ), "end_positions": _ids(BATCH, high=SEQ)},
        "loss": _loss,
    }


# ------------------------------------------------------ encoder-decoders


def _seq2seq(config_cls: str, model_cls: str, attention: str, **kw) -> dict[str, Any]:
    model = _build(config_cls, model_cls, attention, vocab_size=VOCAB, use_cache=False, **kw)
    ids = _ids(BATCH, SEQ, low=3)
    labels = _ids(BATCH, SEQ - 2, low=3)
    return {"module": model, "inputs": (ids,), "kwargs": {"labels": labels}, "loss": _loss}


_BART = {
    "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 64,
    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2,
}


@case("t5", "eager")
def t5():
    """Relative position buckets, RMS norm, gated-GELU feed-forward, decoder inputs shifted from the labels."""
    return _seq2seq(
        "T5Config", "T5ForConditionalGeneration", "eager", d_model=32, d_kv=8, d_ff=64, num_layers=2,
        num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
        feed_forward_proj="gated-gelu", pad_token_id=0, decoder_start_token_id=0, eos_token_id=1,
    )


@case("bart", "sdpa")
def bart():
    """Learned positions, post-LayerNorm encoder-decoder with cross-attention."""
    return _seq2seq("BartConfig", "BartForConditionalGeneration", "sdpa", **_BART)


@case("marian", "eager")
def marian():
    """Sinusoidal positions, scaled embeddings, a final-logits bias."""
    return _seq2seq("MarianConfig", "MarianMTModel", "eager", **{**_BART, "pad_token_id": 3, "decoder_start_token_id": 3})


# ----------------------------------------------------------------- speech

_W2V = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
    "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3), "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4, "num_labels": 3, "classifier_proj_size": 16,
}


def _audio_classifier(config_cls: str, model_cls: str, attention: str, **kw) -> dict[str, Any]:
    model = _build(config_cls, model_cls, attention, **{**_W2V, **kw})
    wave = _torch().randn(BATCH, AUDIO)
    return {"module": model, "inputs": (wave,), "kwargs": {"labels": _ids(BATCH, high=3)}, "loss": _loss}


@case("wav2vec2", "eager")
def wav2vec2():
    """Raw-waveform conv feature extractor with group norm, weight-normed convolutional positions, post-norm
    transformer, mean-pooled sequence classification."""
    return _audio_classifier("Wav2Vec2Config", "Wav2Vec2ForSequenceClassification", "eager", feat_extract_norm="group")


@case("hubert", "sdpa")
def hubert():
    """Conv feature extractor with layer norm and the stable (pre-)layer-norm transformer."""
    return _audio_classifier(
        "HubertConfig", "HubertForSequenceClassification", "sdpa", feat_extract_norm="layer", do_stable_layer_norm=True,
    )


@case("whisper", "sdpa")
def whisper():
    """Log-mel input (16 bins x 16 frames), conv1d stem with stride 2, sinusoidal encoder positions, decoder LM loss."""
    model = _build(
        "WhisperConfig", "WhisperForConditionalGeneration", "sdpa", vocab_size=VOCAB, num_mel_bins=16,
        encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, d_model=32,
        encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=8, max_target_positions=16,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, use_cache=False,
        suppress_tokens=None, begin_suppress_tokens=None,
    )
    features = _torch().randn(BATCH, 16, 16)
    return {"module": model, "inputs": (features,), "kwargs": {"labels": _ids(BATCH, 8, low=3)}, "loss": _loss}


# ----------------------------------------------------------------- vision

_VIT = {
    "image_size": IMAGE, "patch_size": 8, "num_channels": 3, "hidden_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 64,
}


def _image(module, labels: int | None = 10) -> dict[str, Any]:
    pixels = _torch().randn(BATCH, 3, IMAGE, IMAGE)
    if labels is None:
        return {"module": module, "inputs": (pixels,)}
    return {"module": module, "inputs": (pixels,), "kwargs": {"labels": _ids(BATCH, high=labels)}, "loss": _loss}


@case("vit", "sdpa")
def vit():
    """Patch embedding (conv 8x8 stride 8), class token, global attention, image classification."""
    return _image(_build("ViTConfig", "ViTForImageClassification", "sdpa", num_labels=10, **_VIT))


@case("deit", "eager")
def deit():
    """Class and distillation tokens with two heads; logits only (the runner's default loss)."""
    return _image(_build("DeiTConfig", "DeiTForImageClassificationWithTeacher", "eager", num_labels=10, **_VIT), labels=None)


@case("swin", "eager")
def swin():
    """Windowed attention (4x4 windows, shifted in every second block, relative position bias), patch merging."""
    model = _build(
        "SwinConfig", "SwinForImageClassification", "eager", image_size=IMAGE, patch_size=2, num_channels=3,
        embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4, mlp_ratio=2.0, num_labels=10,
    )
    return _image(model)


@case("resnet")
def resnet():
    """Basic-block ResNet: conv, batch norm (training statistics), ReLU, max pool, strided shortcuts; one SGD step
    with momentum. Four stages take a 32x32 image down to 1x1, so the last batch norms see N*H*W = 2 elements per
    channel, the ill-conditioned statistics issue 23 found."""
    model = _build(
        "ResNetConfig", "ResNetForImageClassification", num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 16, 32],
        depths=[1, 1, 1, 1], layer_type="basic", num_labels=10,
    )
    c = _image(model)
    c["optimizer"] = lambda params: _torch().optim.SGD(params, lr=1e-2, momentum=0.9)
    return c


@case("convnext")
def convnext():
    """Patchify stem, depthwise 7x7 convs, channels-last LayerNorm, GELU, layer scale."""
    model = _build(
        "ConvNextConfig", "ConvNextForImageClassification", num_channels=3, patch_size=4, num_stages=2,
        hidden_sizes=[16, 32], depths=[2, 2], num_labels=10, image_size=IMAGE,
    )
    return _image(model)
