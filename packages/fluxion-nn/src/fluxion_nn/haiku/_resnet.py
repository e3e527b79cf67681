"""``hk.nets.ResNet`` and ResNet18/34/50/101/152/200 (v1 and v2 blocks) with Haiku's module
and parameter names (``initial_conv``, ``block_group_0/~/block_0/~/conv_0``, ``logits``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import fluxion.numpy as jnp
from fluxion.nn import relu

from ._layers import BatchNorm, Linear, max_pool
from ._module import Module
from ._src.conv import Conv2D

__all__ = ["ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152",
           "ResNet200"]


def _conv(channels: int, kernel: int, stride: Any, name: str) -> Conv2D:
    return Conv2D(output_channels=channels, kernel_shape=kernel, stride=stride,
                  with_bias=False, padding="SAME", name=name)


class _Block(Module):
    """One residual block: 2 (basic) or 3 (bottleneck) conv + batch-norm pairs and an optional
    projection shortcut. ``v2`` selects the pre-activation ordering."""

    v2 = False

    def __init__(self, channels: int, stride: Any, use_projection: bool,
                 bn_config: Mapping[str, Any], bottleneck: bool, name: str | None = None):
        super().__init__(name=name)
        self.use_projection = use_projection
        bn_config = dict(bn_config)
        bn_config.setdefault("create_scale", True)
        bn_config.setdefault("create_offset", True)
        if not self.v2:
            bn_config.setdefault("decay_rate", 0.999)
        if use_projection:
            self.proj_conv = _conv(channels, 1, stride, "shortcut_conv")
            if not self.v2:
                self.proj_batchnorm = BatchNorm(name="shortcut_batchnorm", **bn_config)
        inner = channels // 4 if bottleneck else channels
        specs = ([(inner, 1, 1), (inner, 3, stride), (channels, 1, 1)] if bottleneck
                 else [(inner, 3, stride), (inner, 3, 1)])
        layers = []
        for i, (ch, k, s) in enumerate(specs):
            conv = _conv(ch, k, s, f"conv_{i}")
            extra = {"scale_init": jnp.zeros} if (bottleneck and i == 2 and not self.v2) else {}
            layers.append((conv, BatchNorm(name=f"batchnorm_{i}", **bn_config, **extra)))
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool) -> Any:
        if self.v2:
            x = shortcut = inputs
            for i, (conv, bn) in enumerate(self.layers):
                x = relu(bn(x, is_training, test_local_stats))
                if i == 0 and self.use_projection:
                    shortcut = self.proj_conv(x)
                x = conv(x)
            return x + shortcut
        out = shortcut = inputs
        if self.use_projection:
            shortcut = self.proj_batchnorm(self.proj_conv(shortcut), is_training,
                                           test_local_stats)
        for i, (conv, bn) in enumerate(self.layers):
            out = bn(conv(out), is_training, test_local_stats)
            if i < len(self.layers) - 1:
                out = relu(out)
        return relu(out + shortcut)


class BlockV1(_Block):
    """ResNet v1 block (conv, batch norm, relu; relu after the residual sum).

    Example: ``hk.nets.ResNet.BlockV1(64, 1, False, {"decay_rate": 0.9}, False)``.
    """


class BlockV2(_Block):
    """ResNet v2 block (pre-activation: batch norm, relu, conv).

    Example: ``hk.nets.ResNet.BlockV2(64, 1, False, {"decay_rate": 0.9}, False)``.
    """

    v2 = True


class BlockGroup(Module):
    """``num_blocks`` blocks; the first has the group's stride and projection.

    Example: ``BlockGroup(64, 2, 1, {"decay_rate": 0.9}, False, False, False)``.
    """

    def __init__(self, channels: int, num_blocks: int, stride: Any,
                 bn_config: Mapping[str, Any], resnet_v2: bool, bottleneck: bool,
                 use_projection: bool, name: str | None = None):
        super().__init__(name=name)
        cls = BlockV2 if resnet_v2 else BlockV1
        self.blocks = [cls(channels=channels, stride=1 if i else stride,
                           use_projection=i == 0 and use_projection, bottleneck=bottleneck,
                           bn_config=bn_config, name=f"block_{i}") for i in range(num_blocks)]

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool) -> Any:
        for block in self.blocks:
            inputs = block(inputs, is_training, test_local_stats)
        return inputs


def _check_length(value: Sequence, name: str) -> None:
    if len(value) != 4:
        raise ValueError(f"`{name}` must be of length 4 not {len(value)}")


class ResNet(Module):
    """A ResNet (He et al.) as ``hk.nets.ResNet``: initial 7x7 conv (+ batch norm for v1),
    3x3 max pool, four block groups, global mean pool and a ``logits`` linear layer.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     net = hk.nets.ResNet(blocks_per_group=(1, 1, 1, 1), num_classes=3, bottleneck=False,
        ...                          channels_per_group=(4, 8, 8, 8), use_projection=(True,) * 4)
        ...     return net(x, is_training=True)
        >>> f = hk.transform_with_state(f)
        >>> x = jnp.ones((2, 16, 16, 3))
        >>> params, state = f.init(fluxion.random.PRNGKey(0), x)
        >>> logits, state = f.apply(params, state, None, x)
        >>> logits.shape, hk.data_structures.tree_size(params)
        ((2, 3), 15763)
    """

    CONFIGS = {
        18: {"blocks_per_group": (2, 2, 2, 2), "bottleneck": False,
             "channels_per_group": (64, 128, 256, 512),
             "use_projection": (False, True, True, True)},
        34: {"blocks_per_group": (3, 4, 6, 3), "bottleneck": False,
             "channels_per_group": (64, 128, 256, 512),
             "use_projection": (False, True, True, True)},
        50: {"blocks_per_group": (3, 4, 6, 3), "bottleneck": True,
             "channels_per_group": (256, 512, 1024, 2048),
             "use_projection": (True, True, True, True)},
        101: {"blocks_per_group": (3, 4, 23, 3), "bottleneck": True,
              "channels_per_group": (256, 512, 1024, 2048),
              "use_projection": (True, True, True, True)},
        152: {"blocks_per_group": (3, 8, 36, 3), "bottleneck": True,
              "channels_per_group": (256, 512, 1024, 2048),
              "use_projection": (True, True, True, True)},
        200: {"blocks_per_group": (3, 24, 36, 3), "bottleneck": True,
              "channels_per_group": (256, 512, 1024, 2048),
              "use_projection": (True, True, True, True)},
    }
    BlockV1 = BlockV1
    BlockV2 = BlockV2

    def __init__(self, blocks_per_group: Sequence[int], num_classes: int,
                 bn_config: Mapping[str, Any] | None = None, resnet_v2: bool = False,
                 bottleneck: bool = True,
                 channels_per_group: Sequence[int] = (256, 512, 1024, 2048),
                 use_projection: Sequence[bool] = (True, True, True, True),
                 logits_config: Mapping[str, Any] | None = None, name: str | None = None,
                 initial_conv_config: Mapping[str, Any] | None = None,
                 strides: Sequence[int] = (1, 2, 2, 2)):
        super().__init__(name=name)
        self.resnet_v2 = resnet_v2
        bn = {"decay_rate": 0.9, "eps": 1e-5, "create_scale": True, "create_offset": True,
              **dict(bn_config or {})}
        logits = {"w_init": jnp.zeros, "name": "logits", **dict(logits_config or {})}
        _check_length(blocks_per_group, "blocks_per_group")
        _check_length(channels_per_group, "channels_per_group")
        _check_length(strides, "strides")
        conv0 = {"output_channels": 64, "kernel_shape": 7, "stride": 2, "with_bias": False,
                 "padding": "SAME", "name": "initial_conv", **dict(initial_conv_config or {})}
        self.initial_conv = Conv2D(**conv0)
        if not resnet_v2:
            self.initial_batchnorm = BatchNorm(name="initial_batchnorm", **bn)
        self.block_groups = [
            BlockGroup(channels=channels_per_group[i], num_blocks=blocks_per_group[i],
                       stride=stride, bn_config=bn, resnet_v2=resnet_v2, bottleneck=bottleneck,
                       use_projection=use_projection[i], name=f"block_group_{i}")
            for i, stride in enumerate(strides)]
        if resnet_v2:
            self.final_batchnorm = BatchNorm(name="final_batchnorm", **bn)
        self.logits = Linear(num_classes, **logits)

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool = False) -> Any:
        out = self.initial_conv(inputs)
        if not self.resnet_v2:
            out = relu(self.initial_batchnorm(out, is_training, test_local_stats))
        out = max_pool(out, window_shape=(1, 3, 3, 1), strides=(1, 2, 2, 1), padding="SAME")
        for group in self.block_groups:
            out = group(out, is_training, test_local_stats)
        if self.resnet_v2:
            out = relu(self.final_batchnorm(out, is_training, test_local_stats))
        return self.logits(jnp.mean(out, axis=(1, 2)))


def _preset(depth: int) -> type:
    def __init__(self: ResNet, num_classes: int, bn_config: Mapping[str, Any] | None = None,
                 resnet_v2: bool = False, logits_config: Mapping[str, Any] | None = None,
                 name: str | None = None, initial_conv_config: Mapping[str, Any] | None = None,
                 strides: Sequence[int] = (1, 2, 2, 2)) -> None:
        ResNet.__init__(self, num_classes=num_classes, bn_config=bn_config,
                        initial_conv_config=initial_conv_config, resnet_v2=resnet_v2,
                        strides=strides, logits_config=logits_config, name=name,
                        **ResNet.CONFIGS[depth])

    doc = (f"ResNet{depth} (``ResNet.CONFIGS[{depth}]``).\n\n"
           "    Example: its parameter count for 10 classes, from shapes alone (nothing is computed).\n\n"
           "        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk\n"
           "        >>> def net(images):\n"
           f"        ...     return hk.nets.ResNet{depth}(num_classes=10)(images, is_training=True)\n"
           "        >>> f = hk.transform_with_state(net)\n"
           "        >>> images = jnp.ones((1, 32, 32, 3))\n"
           "        >>> params, state = fluxion.eval_shape(f.init, fluxion.random.PRNGKey(0), images)\n"
           "        >>> hk.data_structures.tree_size(params)\n"
           f"        {_PRESET_SIZES[depth]}\n    ")
    return type(f"ResNet{depth}", (ResNet,), {"__init__": __init__, "__doc__": doc,
                                              "__module__": __name__})


# the parameter count of each preset with 10 classes (its docstring example's output; haiku's
# hk.nets presets give the same counts)
_PRESET_SIZES = {18: 11181642, 34: 21289802, 50: 23528522, 101: 42520650, 152: 58164298,
                 200: 62645322}

ResNet18 = _preset(18)
ResNet34 = _preset(34)
ResNet50 = _preset(50)
ResNet101 = _preset(101)
ResNet152 = _preset(152)
ResNet200 = _preset(200)
