package testcluster

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeName is the one node of the test ground: the kubelet stand-in.
const NodeName = "hookwright-test-node"

const (
	nodeLeaseNamespace = "kube-node-lease"
	// nodeLeaseDuration and nodeLeaseRenewInterval are kubelet's defaults
	// (40 s lease, renewed every quarter of it).
	nodeLeaseDuration      = 40 * time.Second
	nodeLeaseRenewInterval = 10 * time.Second
)

// registerNode creates the Node with a Ready status and its Lease, as
// kubelet does when it joins.
func registerNode(ctx context.Context, c client.Client) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{
			corev1.LabelHostname: NodeName, corev1.LabelOSStable: "linux",
		}},
	}
	if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("10000"),
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: NodeName}},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message:           "the test ground's kubelet stand-in is posting ready status",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: KubeVersion, OperatingSystem: "linux", Architecture: "amd64"},
	}
	node.Status.Allocatable = node.Status.Capacity
	if err := c.Status().Update(ctx, node); err != nil {
		return nil, err
	}
	// kube-node-lease is created by the API server shortly after it
	// serves; a Lease that cannot be written yet is written at the next
	// renewal.
	_ = renewNodeLease(ctx, c, node)
	return node, nil
}

// renewNodeLease creates or renews the node's Lease: the heartbeat the node
// lifecycle controller reads.
func renewNodeLease(ctx context.Context, c client.Client, node *corev1.Node) error {
	var lease coordinationv1.Lease
	err := c.Get(ctx, types.NamespacedName{Namespace: nodeLeaseNamespace, Name: node.Name}, &lease)
	if apierrors.IsNotFound(err) {
		lease = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: nodeLeaseNamespace, Name: node.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To(int32(nodeLeaseDuration.Seconds())),
				RenewTime:            &metav1.MicroTime{Time: time.Now()},
			},
		}
		return c.Create(ctx, &lease)
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	return c.Update(ctx, &lease)
}

// keepNodeAlive renews the Lease until ctx ends; failures are retried at the
// next tick (a missed renewal is what a real node's hiccup looks like).
func keepNodeAlive(ctx context.Context, c client.Client, node *corev1.Node) {
	ticker := time.NewTicker(nodeLeaseRenewInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			_ = renewNodeLease(ctx, c, node)
		}
	}
}
