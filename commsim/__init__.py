"""commsim: predict and explain the time of collective communication on GPU machines."""

__version__ = "0.1.0"
