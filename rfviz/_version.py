"""The package version, in a module of its own so that the lowest layers (figure export) can read it without
importing the package root."""

__version__ = "0.1.0"
