"""``haiku._src.nets``: the private layout of ``hk.nets`` (``mlp``, ``resnet``, ``mobilenetv1``,
``vqvae``)."""
