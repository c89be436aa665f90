"""What the command-line tools share, which is not a command itself.

  cli             run(): absl's app, one-line errors, exit status 1
  settings_flags  absl flags generated from the settings dataclasses
  pipeline_demo   the stages `make demo` runs (tools.demo)

May import: albert_tf, data_pipeline, albert_common (the tools are the
only importers of this folder).
"""
