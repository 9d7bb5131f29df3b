// Package k8stest applies the k8s-test overlay (the dev overlay with locally built images)
// to a real single-node Kubernetes and checks what a manifest that validates cannot show:
// every Deployment becomes ready with its probes, Service names resolve, a service scales
// to three replicas with one ingester, streams resume, pods and PostgreSQL die and come
// back with nothing lost, the HorizontalPodAutoscaler scales on metrics, and a rolling
// update keeps answering. Its test has the build tag k8s and needs the cluster of
// scripts/k8s (make k8s-test brings it up, runs the test and takes it down).
package k8stest
