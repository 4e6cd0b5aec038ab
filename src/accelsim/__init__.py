"""accelsim: what a GPU or TPU fleet will really cost, and when the model will be trained."""

__version__ = "0.1.0"
