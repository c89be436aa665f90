"""GLUE: examples (the task table and TSV readers), features, metrics."""
