package main

import (
	"fmt"
	"math/rand/v2"
)

const (
	jsonMediaType = "application/json"
	cborMediaType = "application/cbor"
)

// formatWorkload is a workload run in several media types on the same subject.
type formatWorkload struct {
	id      string
	formats []string
	run     func(s *subject, mediaType string) (measurement, error)
}

// formatRounds measures the generated server answering (and, for creates, reading)
// protobuf and CBOR next to the same requests in JSON, for the subjects given in the
// round's order: gets, lists, the watch fan-out and creates, the formats of a workload
// one after another on the same objects, their order rotating from round to round.
func formatRounds(cfg servingConfig, round int, subjects []*subject, res *Results) error {
	for _, w := range formatWorkloads(cfg) {
		for _, s := range subjects {
			for _, mt := range rotated(w.formats, round) {
				name := ""
				if w.id == wListLarge && mt == protobufMediaType {
					name = "list-protobuf" // -profile: the list of all objects in protobuf
				}
				stop := profile(cfg, s, name, round)
				m, err := w.run(s, mt)
				stop()
				if err != nil {
					return fmt.Errorf("%s, %s, %s: %w", workloadTitle(w.id, res.Run.Config), subjectTitles[s.id], mt, err)
				}
				res.add(tableFormats, w.id, s.id, mt, m.sample())
			}
		}
	}
	return nil
}

// formatWorkloads are the workloads of the format comparison, creates last (they add
// objects the lists would count). CBOR is left out of the watch (the bench reads JSON and
// protobuf watch frames) and of creates (the bench writes JSON and protobuf bodies).
func formatWorkloads(cfg servingConfig) []formatWorkload {
	small := cfg.objects / 10
	all := []string{jsonMediaType, protobufMediaType, cborMediaType}
	get := func(n, c int) func(s *subject, mediaType string) (measurement, error) {
		return func(s *subject, mediaType string) (measurement, error) {
			return runOps(n, c, s.procs, func(int) error {
				_, err := doAccept(s.client, fmt.Sprintf("%s/boat-%05d", s.base, rand.IntN(small)), mediaType)
				return err
			})
		}
	}
	listN := func(selector string, n, want int) func(s *subject, mediaType string) (measurement, error) {
		return func(s *subject, mediaType string) (measurement, error) {
			return runOps(n, 1, s.procs, func(int) error {
				url := s.base
				if selector != "" {
					url += "?labelSelector=" + selector
				}
				data, err := doAccept(s.client, url, mediaType)
				if err != nil {
					return err
				}
				if got := countItems(data, mediaType); got != want {
					return fmt.Errorf("list %s as %s: %d items, want %d", url, mediaType, got, want)
				}
				return nil
			})
		}
	}
	// A base for spec.lengthMeters no other watch of the namespace used.
	watchBase := map[string]int{jsonMediaType: 100, protobufMediaType: 150}
	created := map[*subject]int{}
	return []formatWorkload{
		{wGet, all, get(4*small, cfg.concurrency)},
		{wGet1, all, get(small/2, 1)},
		{wSelector, all, listN("shard=3", 10, cfg.objects/10)},
		{wListLarge, all, listN("", 5, cfg.objects)},
		{wWatch, []string{jsonMediaType, protobufMediaType}, func(s *subject, mediaType string) (measurement, error) {
			return watchFanOutAs(s, cfg, mediaType, watchBase[mediaType])
		}},
		{wCreate, []string{jsonMediaType, protobufMediaType}, func(s *subject, mediaType string) (measurement, error) {
			body, err := createBodies(s, mediaType)
			if err != nil {
				return measurement{}, err
			}
			first := created[s]
			created[s] += small
			return runOps(small, cfg.concurrency, s.procs, func(i int) error {
				data, err := body(fmt.Sprintf("boat-c-%06d", first+i))
				if err != nil {
					return err
				}
				return postAs(s.client, s.base, mediaType, data)
			})
		}},
	}
}
