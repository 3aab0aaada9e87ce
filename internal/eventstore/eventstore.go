// Package eventstore is the hub's store of Streamable HTTP events for
// mcp-go (server.WithEventStore): what lets a client resume a broken reply
// stream, with bounded memory.
package eventstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/server"
)

// Store keeps the last events of the latest streams of recent
// sessions, so a client whose reply stream broke can resume it with
// Last-Event-ID (Streamable HTTP resumability). Its bounds keep memory flat
// whatever the traffic: old sessions, streams and events are forgotten, and
// resuming from a forgotten event fails cleanly as unknown.
//
// It also closes a race in mcp-go's reply streams: without a store, a
// notification that mcp-go's forwarder has taken off the session's channel
// when the response is written is dropped; with one, mcp-go waits for the
// forwarder and delivers it before the response.
type Store struct {
	sessions *lru.Cache[string, *sessionLog]
	seq      atomic.Uint64
	bytes    atomic.Int64 // bytes of the messages kept
}

// Bounds of the event store. A message larger than storeMaxEvent is sent
// but not kept (resuming after it fails as unknown); when the store holds
// more than storeMaxBytes, the least recently used sessions are forgotten.
const (
	storeSessions     = 4096
	streamsPerSession = 8
	eventsPerStream   = 256
	storeMaxEvent     = 64 << 10
	storeMaxBytes     = 32 << 20
)

var _ server.EventStore = (*Store)(nil)

type sessionLog struct {
	mu      sync.Mutex
	order   []string // stream ids, oldest first
	streams map[string][]storedEvent
	bytes   int64
	evicted bool // forgotten by the store: keeps nothing more
}

type storedEvent struct {
	id  string
	msg json.RawMessage
}

// New returns an empty store.
func New() *Store {
	s := &Store{}
	s.sessions, _ = lru.NewWithEvict(storeSessions, func(_ string, log *sessionLog) {
		log.mu.Lock()
		s.bytes.Add(-log.bytes)
		log.bytes, log.evicted = 0, true
		log.mu.Unlock()
	})
	return s
}

// StoreEvent keeps message as the next event of the session's stream and
// returns its id; a message too large to keep is sent all the same.
func (s *Store) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	id := strconv.FormatUint(s.seq.Add(1), 10)
	log, ok := s.sessions.Get(sessionID)
	if !ok {
		log = &sessionLog{streams: map[string][]storedEvent{}}
		if prev, found, _ := s.sessions.PeekOrAdd(sessionID, log); found {
			log = prev
		}
	}
	if len(message) > storeMaxEvent {
		return id, nil
	}
	log.mu.Lock()
	if log.evicted {
		log.mu.Unlock()
		return id, nil
	}
	var freed int64
	events, known := log.streams[streamID]
	if !known {
		log.order = append(log.order, streamID)
		if len(log.order) > streamsPerSession {
			for _, ev := range log.streams[log.order[0]] {
				freed += int64(len(ev.msg))
			}
			delete(log.streams, log.order[0])
			log.order = log.order[1:]
		}
	}
	if len(events) >= eventsPerStream {
		freed += int64(len(events[0].msg))
		events = events[1:]
	}
	log.streams[streamID] = append(events, storedEvent{id: id, msg: bytes.Clone(message)})
	delta := int64(len(message)) - freed
	log.bytes += delta
	s.bytes.Add(delta)
	log.mu.Unlock()
	for s.bytes.Load() > storeMaxBytes && s.sessions.Len() > 1 {
		s.sessions.RemoveOldest()
	}
	return id, nil
}

// ReplayEventsAfter sends the events of lastEventID's stream that came
// after it and returns the stream's id; a forgotten event is unknown.
func (s *Store) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	log, ok := s.sessions.Get(sessionID)
	if !ok {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	log.mu.Lock()
	var stream string
	var tail []storedEvent
	for id, events := range log.streams {
		for i, ev := range events {
			if ev.id == lastEventID {
				stream, tail = id, append([]storedEvent(nil), events[i+1:]...)
			}
		}
	}
	log.mu.Unlock()
	if stream == "" {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	for _, ev := range tail {
		if err := send(ev.id, ev.msg); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// StreamOf returns the stream of session that eventID was recorded on,
// while the store keeps the event: a client resuming with Last-Event-ID
// resumes the stream that carried it, which the hub serves itself (the
// standalone GET stream) or leaves to mcp-go (a reply stream).
func (s *Store) StreamOf(sessionID, eventID string) (string, bool) {
	log, ok := s.sessions.Peek(sessionID)
	if !ok {
		return "", false
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for stream, events := range log.streams {
		for _, ev := range events {
			if ev.id == eventID {
				return stream, true
			}
		}
	}
	return "", false
}

// PurgeSession forgets a session that ended.
func (s *Store) PurgeSession(_ context.Context, sessionID string) error {
	s.sessions.Remove(sessionID)
	return nil
}
