"""The analytical model: pure numpy functions, arrays in and arrays out.

Every function broadcasts over its array arguments, so one call evaluates one scenario or a
million. The equations, their assumptions and references are written down in docs/model.md.
"""
