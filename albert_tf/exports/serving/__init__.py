"""Raw-text SavedModels of fine-tuned models: each takes strings and returns
the task's answer (labels, spans, choices), beside a token-ids signature.

  classifier       export_classifier (GLUE; own data: label names)
  squad_export     export_squad, on squad_serving (the in-graph pipeline),
                   squad_serving_context and squad_serving_wordpiece
  race             export_race, export_multiple_choice (one's own choices)
  ner_export       export_ner and load_ner, on ner_serving (the in-graph
                   pipeline) and ner_decoding (tags -> entities)

May import: albert_tf.exports' encoder-side modules, albert_tf,
data_pipeline, albert_common.
"""
