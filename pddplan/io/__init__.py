"""Input and output at the edge: strict YAML, the profile registry, overrides."""
