// tests/apps/node-cluster.js PORT — the server of node-cluster.sh: a Node.js
// cluster primary with 2 workers answering HTTP with a body naming the request
// (and the worker), padded with `?lines=N` numbered lines; prints "ready".
'use strict';
const cluster = require('cluster');
const http = require('http');
const port = Number(process.argv[2]);

if (cluster.isPrimary) {
	let listening = 0;
	for (let i = 0; i < 2; i++)
		cluster.fork().on('listening', () => {
			if (++listening === 2)
				console.log('ready');
		});
	// SIGTERM: the workers leave first, then the primary, each through exit()
	// so that the hook prints its statistics line.
	process.on('SIGTERM', () => {
		let alive = Object.keys(cluster.workers).length;
		if (!alive)
			process.exit(0);
		for (const id in cluster.workers)
			cluster.workers[id].on('exit', () => { if (--alive === 0) process.exit(0); }).process.kill('SIGTERM');
	});
} else {
	process.on('SIGTERM', () => process.exit(0));
	http.createServer((req, res) => {
		const url = new URL(req.url, 'http://x');
		const lines = Number(url.searchParams.get('lines') || 0);
		const body = [`req ${url.pathname} worker ${process.pid}`];
		for (let k = 1; k <= lines; k++)
			body.push(`${url.pathname} ${k}`);
		res.end(body.join('\n') + '\n');
	}).listen(port, '127.0.0.1');
}
