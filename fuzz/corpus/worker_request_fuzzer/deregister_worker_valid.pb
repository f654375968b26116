DeregisterWorker

	workers/1 paratune-worker received SIGTERM