"""Distillation of a fine-tuned classifier into a student (tools.distill).

settings      DistillationOptions: the teacher, the student, the losses
losses        soft targets (Hinton), MiniLM attention + value relations,
              TinyBERT hidden states through a projection
teacher       a fine-tuned run directory read and checked against the run
teacher_cache the teacher's logits, computed once, fingerprinted
student_rule  the student's config rule (no TensorFlow)
student       the model a student trains with an intermediate loss
run           run_distillation: what tools.distill calls
"""
