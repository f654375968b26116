Heartbeat

	workers/7!searches/3/candidates/12/probes/2