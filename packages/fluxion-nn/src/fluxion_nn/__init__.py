"""Neural-network modules for Fluxion: mirrors ``flax.nnx`` (``import fluxion_nn as nnx``),
plus a Haiku-style namespace (``fluxion_nn.haiku``) and crash-safe checkpoints
(``fluxion_nn.checkpoint``)."""

from __future__ import annotations

from typing import TypeVar as _TypeVar

from fluxion.nn import (
                        celu,
                        elu,
                        gelu,
                        glu,
                        hard_sigmoid,
                        hard_silu,
                        hard_swish,
                        hard_tanh,
                        identity,
                        leaky_relu,
                        log_sigmoid,
                        log_softmax,
                        logsumexp,
                        one_hot,
                        relu,
                        relu6,
                        selu,
                        sigmoid,
                        silu,
                        soft_sign,
                        softmax,
                        softplus,
                        standardize,
                        swish,
                        tanh,
)
from fluxion.nn.initializers import Initializer

from . import bridge, compat, extract, graphlib, ids, spmd, traversals
from . import hijax as _hijax  # noqa: F401  (registers hijax Variables in variablelib)
from .extract import NodeStates, from_tree, prefix, to_tree
from .filterlib import All, Any, Everything, Not, Nothing, OfType, PathContains, WithTag
from .graph import (
                        GraphDef,
                        GraphState,
                        PureState,
                        call,
                        clone,
                        find_duplicates,
                        flatten,
                        graphdef,
                        is_graph_node,
                        iter_children,
                        iter_graph,
                        map,
                        merge,
                        pop,
                        recursive_map,
                        set_graph_mode,
                        set_graph_updates,
                        set_metadata,
                        split,
                        state,
                        unflatten,
                        unpack,
                        update,
                        variables,
)
from .graph_context import (
                        MergeContext,
                        SplitContext,
                        UpdateContext,
                        current_update_context,
                        merge_context,
                        split_context,
                        update_context,
)
from .graphlib import with_vars
from .module import (
                        Dict,
                        Module,
                        capture,
                        display,
                        iter_module_children,
                        iter_modules,
                        view,
                        view_info,
                        with_attributes,
)
from .nn import initializers
from .nn.activations import PReLU
from .nn.attention import (
                        MultiHeadAttention,
                        combine_masks,
                        dot_product_attention,
                        dot_product_attention_weights,
                        make_attention_mask,
                        make_causal_mask,
)
from .nn.linear import Conv, ConvTranspose, Einsum, Embed, Linear, LinearGeneral
from .nn.lora import LoRA, LoRALinear, LoRAParam
from .nn.normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm
from .nn.pooling import avg_pool, max_pool, min_pool, pool
from .nn.recurrent import (
                        RNN,
                        Bidirectional,
                        GRUCell,
                        LSTMCell,
                        OptimizedLSTMCell,
                        RNNCellBase,
                        SimpleCell,
                        flip_sequences,
)
from .nn.sequential import Sequential
from .nn.stochastic import Dropout
from .nn.weight_norms import SpectralNorm, WeightNorm
from .pytreelib import (
                        Data,
                        List,
                        Object,
                        Pytree,
                        Static,
                        data,
                        dataclass,
                        has_data,
                        is_data,
                        register_data_type,
                        static,
)
from .rnglib import (
                        RngCount,
                        RngKey,
                        Rngs,
                        RngState,
                        RngStream,
                        fork_rngs,
                        reseed,
                        restore_rngs,
                        split_rngs,
                        with_rngs,
)
from .spmd import (
                        PARTITION_NAME,
                        abstract_with_sharding,
                        as_abstract,
                        get_abstract_model,
                        get_named_sharding,
                        get_partition_spec,
                        logical_axis_rules,
                        transform_metadata,
)
from .statelib import (
                        FlatState,
                        State,
                        filter_state,
                        from_flat_state,
                        map_state,
                        merge_state,
                        replace_by_pure_dict,
                        restore_int_paths,
                        split_state,
                        to_flat_state,
                        to_pure_dict,
)
from .summary import tabulate
from .training import metrics
from .training.ema import EMA
from .training.metrics import Metric, MultiMetric
from .training.optimizer import ModelAndOptimizer, OptArray, Optimizer, OptState, OptVariable
from .training.train_state import TrainState
from .transforms import (
                        Carry,
                        DiffState,
                        StateAxes,
                        StateSharding,
                        cached_partial,
                        checkify,
                        cond,
                        custom_vjp,
                        eval_shape,
                        fori_loop,
                        grad,
                        jit,
                        jit_partial,
                        jvp,
                        make_jaxpr,
                        pmap,
                        remat,
                        scan,
                        shard_map,
                        switch,
                        value_and_grad,
                        vjp,
                        vmap,
                        while_loop,
)
from .variablelib import (
                        BatchStat,
                        Cache,
                        Intermediate,
                        Param,
                        Perturbation,
                        Variable,
                        VariableMetadata,
                        as_pure,
                        register_variable_name,
                        use_eager_sharding,
                        using_eager_sharding,
                        var_defaults,
                        variable_name_from_type,
                        variable_type_from_name,
                        with_metadata,
                        with_partitioning,
)

__all__ = [
    # variables, state, graph
    "Variable", "Param", "BatchStat", "Cache", "Intermediate", "Perturbation",
    "register_variable_name", "variable_name_from_type", "variable_type_from_name",
    "VariableMetadata", "with_metadata", "with_partitioning", "as_pure", "Static",
    "State", "FlatState", "to_flat_state", "from_flat_state", "to_pure_dict",
    "replace_by_pure_dict", "restore_int_paths", "filter_state", "merge_state", "split_state", "map_state",
    "GraphDef", "split", "merge", "state", "graphdef", "update", "clone", "pop", "flatten",
    "unflatten", "iter_graph", "iter_children", "is_graph_node", "variables", "find_duplicates",
    "call", "set_graph_mode", "set_graph_updates", "var_defaults", "use_eager_sharding",
    "using_eager_sharding", "Pytree", "Object", "Module", "iter_modules", "iter_module_children", "view", "view_info", "with_attributes", "display", "capture",
    "data", "static", "List", "Dict", "has_data", "is_data", "dataclass", "Data",
    "register_data_type",
    "All", "Any", "Not", "Everything", "Nothing", "OfType", "PathContains", "WithTag",
    "Rngs", "RngStream", "RngState", "RngKey", "RngCount", "reseed", "split_rngs",
    "fork_rngs", "restore_rngs", "with_rngs", "recursive_map",
    "GraphState", "unpack", "map", "prefix", "extract", "graphlib", "ids", "traversals", "set_metadata", "PureState",
    "with_vars",
    "update_context", "current_update_context", "split_context", "merge_context",
    "SplitContext", "MergeContext", "UpdateContext", "NodeStates", "to_tree", "from_tree",
    # sharding
    "PARTITION_NAME", "get_partition_spec", "get_named_sharding", "get_abstract_model",
    "as_abstract", "abstract_with_sharding", "logical_axis_rules", "spmd", "transform_metadata", "bridge",
    # transforms
    "jit", "grad", "value_and_grad", "vmap", "scan", "remat", "cond", "switch", "fori_loop",
    "while_loop", "eval_shape", "custom_vjp", "DiffState", "Carry", "StateAxes", "StateSharding", "cached_partial", "jit_partial",
    "vjp", "jvp", "pmap", "checkify", "make_jaxpr", "shard_map",
    # layers
    "Linear", "LinearGeneral", "Einsum", "Embed", "Conv", "ConvTranspose",
    "BatchNorm", "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "WeightNorm", "SpectralNorm", "Dropout",
    "MultiHeadAttention", "dot_product_attention", "dot_product_attention_weights",
    "make_attention_mask", "make_causal_mask", "combine_masks", "LoRA", "LoRALinear", "LoRAParam",
    "pool", "avg_pool", "max_pool", "min_pool", "RNNCellBase", "LSTMCell", "GRUCell",
    "SimpleCell", "OptimizedLSTMCell", "PReLU", "RNN", "Bidirectional", "flip_sequences", "Sequential",
    # training
    "Optimizer", "ModelAndOptimizer", "OptState", "OptArray", "OptVariable", "metrics", "Metric",
    "MultiMetric", "tabulate", "TrainState", "EMA", "compat",
    # activations (from fluxion.nn)
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "one_hot", "relu",
    "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "standardize",
    "swish", "tanh", "initializers", "Initializer",
]

A = _TypeVar("A")
M = _TypeVar("M", bound=Module)
