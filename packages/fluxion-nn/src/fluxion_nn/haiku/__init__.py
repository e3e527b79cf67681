"""A Haiku-style namespace over Fluxion: ``import fluxion_nn.haiku as hk`` runs Haiku code
(``hk.transform``, ``hk.get_parameter``, ``hk.Linear``, ``hk.nets.MLP``, ...)."""

from __future__ import annotations

import importlib
import sys
import types

from fluxion.nn import one_hot

from . import config, data_structures, experimental, initializers, mixed_precision, nets, pad, testing
from ._attention import DeepRNN, MultiHeadAttention
from ._base import (
    DO_NOT_STORE,
    GetterContext,
    PRNGSequence,
    SetterContext,
    current_name,
    custom_creator,
    custom_getter,
    custom_setter,
    get_current_state,
    get_initial_state,
    get_parameter,
    get_params,
    get_state,
    maybe_get_rng_sequence_state,
    maybe_next_rng_key,
    next_rng_key,
    next_rng_keys,
    replace_rng_sequence_state,
    reserve_rng_keys,
    running_init,
    set_state,
    with_rng,
)
from ._basic import BatchApply, expand_apply, multinomial, to_module
from ._bias import Bias
from ._deferred import Deferred
from ._dot import to_dot
from ._layer_stack import LayerStackTransparencyMapping, layer_stack
from ._layers import (
    GRU,
    LSTM,
    AvgPool,
    BatchNorm,
    Conv1D,
    Conv2D,
    Conv3D,
    ConvND,
    Embed,
    EmbedLookupStyle,
    ExponentialMovingAverage,
    Flatten,
    LayerNorm,
    Linear,
    LSTMState,
    MaxPool,
    Reshape,
    RMSNorm,
    RNNCore,
    Sequential,
    VanillaRNN,
    avg_pool,
    dropout,
    dynamic_unroll,
    get_channel_index,
    max_pool,
    scan,
    static_unroll,
)
from ._lift import (
    LiftWithStateUpdater,
    lift,
    lift_with_state,
    transparent_lift,
    transparent_lift_with_state,
)
from ._lifted import cond, eval_shape, fori_loop, grad, remat, switch, value_and_grad, vmap, while_loop
from ._module import MethodContext, Module, force_name, intercept_methods, name_like, name_scope, transparent
from ._multi_transform import (
    MultiTransformed,
    MultiTransformedWithState,
    multi_transform,
    multi_transform_with_state,
)
from ._param_trees import EMAParamsTree, SNParamsTree, SpectralNorm
from ._recurrent import (
    Conv1DLSTM,
    Conv2DLSTM,
    Conv3DLSTM,
    IdentityCore,
    ResetCore,
    deep_rnn_with_skip_connections,
)
from ._src.conv import Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, ConvNDTranspose
from ._src.depthwise_conv import (
    DepthwiseConv1D,
    DepthwiseConv2D,
    DepthwiseConv3D,
    SeparableDepthwiseConv2D,
)
from ._src.group_norm import GroupNorm
from ._src.layer_norm import InstanceNorm
from ._src.typing import ModuleProtocol, MutableParams, MutableState, Params, State, SupportsCall
from ._transform import (
    Transformed,
    TransformedWithState,
    transform,
    transform_with_state,
    with_empty_state,
    without_apply_rng,
    without_state,
)

__all__ = [
    "transform", "transform_with_state", "without_apply_rng", "without_state",
    "with_empty_state", "Transformed", "TransformedWithState", "get_parameter", "get_state",
    "set_state", "get_params", "get_current_state", "next_rng_key", "next_rng_keys",
    "maybe_next_rng_key", "reserve_rng_keys", "PRNGSequence", "Module", "current_name",
    "running_init", "Linear", "ConvND", "Conv1D", "Conv2D", "Conv3D", "LayerNorm", "RMSNorm",
    "BatchNorm", "ExponentialMovingAverage", "Embed", "LSTM", "LSTMState", "GRU", "VanillaRNN",
    "RNNCore", "Sequential", "Flatten", "Reshape", "dropout", "max_pool", "avg_pool",
    "MaxPool", "AvgPool", "dynamic_unroll", "static_unroll", "scan", "get_channel_index",
    "one_hot", "initializers", "nets", "MultiHeadAttention", "DeepRNN", "Bias", "grad",
    "value_and_grad", "vmap", "cond", "switch", "fori_loop", "while_loop", "remat",
    "DO_NOT_STORE", "GetterContext", "SetterContext", "custom_creator", "custom_getter",
    "custom_setter", "get_initial_state", "maybe_get_rng_sequence_state",
    "replace_rng_sequence_state", "with_rng", "BatchApply", "expand_apply", "multinomial",
    "to_module", "GroupNorm", "InstanceNorm", "experimental", "mixed_precision", "MethodContext", "intercept_methods", "name_scope", "name_like", "transparent", "layer_stack", "LayerStackTransparencyMapping", "config", "testing", "data_structures", "pad", "ConvNDTranspose", "Conv1DTranspose",
    "Conv2DTranspose", "Conv3DTranspose", "EmbedLookupStyle", "eval_shape", "DepthwiseConv1D",
    "DepthwiseConv2D", "DepthwiseConv3D", "lift", "lift_with_state", "transparent_lift",
    "transparent_lift_with_state", "LiftWithStateUpdater", "EMAParamsTree", "SNParamsTree",
    "SpectralNorm", "Conv1DLSTM", "Conv2DLSTM", "Conv3DLSTM", "IdentityCore", "ResetCore",
    "deep_rnn_with_skip_connections", "SeparableDepthwiseConv2D", "Deferred",
    "MultiTransformed", "MultiTransformedWithState", "multi_transform",
    "multi_transform_with_state", "Params", "State", "MutableParams", "MutableState",
    "ModuleProtocol", "SupportsCall", "force_name", "to_dot",
]


# Haiku's implementation modules each hold an ``hk`` namespace of the public names they use
# (``haiku._src.basic.hk.Module``); here that namespace is this public package itself. Importing
# them also makes every private module an attribute of ``_src``, as in Haiku after ``import haiku``.
_HK_SHIMMED = ("attention", "basic", "batch_norm", "bias", "conv", "deferred", "depthwise_conv",
               "embed", "group_norm", "initializers", "layer_norm", "lift", "mixed_precision",
               "moving_averages", "multi_transform", "nets.mlp", "nets.mobilenetv1", "nets.resnet",
               "nets.vqvae", "pad", "pool", "recurrent", "reshape", "rms_norm", "spectral_norm",
               "summarise", "transform")
_PRIVATE_ONLY = ("base", "config", "data_structures", "dot", "eval_shape", "filtering",
                 "jaxpr_info", "layer_stack", "module", "random", "stateful", "typing", "utils")


def _load_private_modules() -> None:
    for name in _HK_SHIMMED + _PRIVATE_ONLY:
        module = importlib.import_module(f"{__name__}._src.{name}")
        if name in _HK_SHIMMED:
            module.hk = sys.modules[__name__]


_load_private_modules()
del _load_private_modules


def _hide_private_submodules() -> None:
    # as Haiku's package (``del _src``): the implementation modules are not attributes of
    # ``hk``, so tools walking hk's attributes (haiku's test_utils.find_subclasses) see only

    for name, value in list(globals().items()):
        if (name.startswith("_") and isinstance(value, types.ModuleType)
                and value.__name__.startswith(__name__ + ".")):
            del globals()[name]


_hide_private_submodules()
del _hide_private_submodules
