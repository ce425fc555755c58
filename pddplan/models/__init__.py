"""Closed-form performance models: pure functions of numbers that broadcast over numpy arrays.

No module here sees a spec object, a dict, a file or a logger.
"""
