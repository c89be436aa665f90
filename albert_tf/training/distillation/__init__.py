"""Distillation of a fine-tuned classifier into a student (tools.distill).

settings      DistillationOptions: the teacher, the student, the losses
losses        soft targets (Hinton), MiniLM attention + value relations,
              TinyBERT's layer mapping, last hidden states (projected)
teacher       a fine-tuned run directory read and checked against the run
teacher_cache the teacher's logits, computed once, fingerprinted
student_rule  the student's config rule (no TensorFlow)
student       the model a student trains with an intermediate loss
run           run_distillation: what tools.distill calls

May import: albert_tf.training.finetuning (the runner, own-data task,
export once), albert_tf.training, albert_tf.exports.serving (the export),
albert_tf, data_pipeline, albert_common.
"""
