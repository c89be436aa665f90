"""Fine-tuning throughput against Hugging Face PyTorch (peers, peers_worker:
one process per contender, alternating, quiet rounds marked) and Model
Garden (classifier_step, length_buckets); packing against length buckets
(packing). Figures sit beside the matmul peak and the padding-free token
count.
"""
