package server

import (
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// withoutSecondFlowControl turns off API priority and fairness (APF) by default; the
// --enable-priority-and-fairness flag turns it back on.
//
// A generated server is reached through kube-apiserver's aggregator, and kube-apiserver
// runs APF on every request before proxying it: the request has already been classified
// by the cluster's FlowSchemas, queued in its priority level and counted against the
// seats it may occupy. APF in the generated server would classify the same request again
// (with the same FlowSchemas, read through its own informers) and queue it a second time,
// which costs CPU and latency on each request and protects nothing kube-apiserver's own
// queues do not already protect: the concurrency that reaches the server through the
// aggregator is bounded by kube-apiserver's seats. Without APF, k8s.io/apiserver installs
// its max-in-flight limit instead (400 read-only and 200 mutating requests, answering 429
// beyond them), which still bounds what clients that call the server directly can do.
// Local mode turns APF off as well (there are no FlowSchemas to read).
//
// k8s.io/sample-apiserver keeps upstream's default (APF on); the bench
// (docs/benchmarks.md) measures the difference on the aggregated path.
func withoutSecondFlowControl(o *genericoptions.RecommendedOptions) {
	if o.Features != nil {
		o.Features.EnablePriorityAndFairness = false
	}
}
