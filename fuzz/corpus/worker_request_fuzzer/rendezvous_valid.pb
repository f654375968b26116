Rendezvous

	workers/1 searches/1/candidates/4/probes/1nccl-unique-id