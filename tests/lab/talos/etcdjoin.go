package talos

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/blang/semver/v4"
)

// reusesUnnamedLearner says whether a Talos version's join takes an
// unnamed learner with its own peer URL as itself when etcd refuses the
// add with "Peer URLs already exists": an earlier add that etcd applied
// while Talos walked away on its attempt timeout ("fix: race in etcd
// member add", siderolabs/talos 416d5fe4b, first in v1.14.0-beta.0;
// v1.14.0-rc.1 internal/app/machined/pkg/system/services/etcd.go
// addMember, lines 310-324). Before, the join retries that refusal
// forever (v1.13.9 addMember has no such case).
func reusesUnnamedLearner(version string) bool {
	v, err := semver.ParseTolerant(version)

	return err == nil && (v.Major > 1 || v.Minor >= 14)
}

// addMember is Talos's addMember (services/etcd.go) through the control
// plane endpoints urls: list the members, remove one named like this node
// (its previous install) with remove, then MemberAddAsLearner with
// peerURL. It returns the members to build --initial-cluster from and the
// learner's ID; with reuse (reusesUnnamedLearner), a refused add whose
// peer URL an unnamed learner of the list has is that learner.
func (g *etcdGateway) addMember(ctx context.Context, urls []string, name, peerURL string, reuse bool,
	remove func(ctx context.Context, id uint64) error,
) ([]gwMember, uint64, error) {
	list, err := g.memberList(ctx, urls)
	if err != nil {
		return nil, 0, fmt.Errorf("error getting etcd member list: %w", err)
	}

	for _, m := range list {
		if m.Name == name {
			if err := remove(ctx, uint64(m.ID)); err != nil {
				return nil, 0, fmt.Errorf("error removing self from the member list: %w", err)
			}
		}
	}

	var added struct {
		Member  gwMember   `json:"member"`
		Members []gwMember `json:"members"`
	}

	peers := []string{peerURL}

	err = g.callAny(ctx, urls, "/v3/cluster/member/add", map[string]any{"peerURLs": peers, "isLearner": true}, &added)

	switch {
	case err == nil:
		return added.Members, uint64(added.Member.ID), nil
	case reuse && errors.Is(err, errEtcdPeerURLExist):
		// Talos returns the list from before the add (which has the
		// learner) and that learner's ID.
		for _, m := range list {
			if slices.Equal(m.PeerURLs, peers) && m.IsLearner && m.Name == "" {
				return list, uint64(m.ID), nil
			}
		}

		return nil, 0, fmt.Errorf("member already exists with the same peer URLs %q, but is not a learner: %w", peers, err)
	default:
		return nil, 0, fmt.Errorf("error adding member: %w", err)
	}
}
