package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/server"
)

// eventStore keeps the last events of the latest streams of recent
// sessions, so a client whose reply stream broke can resume it with
// Last-Event-ID (Streamable HTTP resumability). Its bounds keep memory flat
// whatever the traffic: old sessions, streams and events are forgotten, and
// resuming from a forgotten event fails cleanly as unknown.
//
// It also closes a race in mcp-go's reply streams: without a store, a
// notification that mcp-go's forwarder has taken off the session's channel
// when the response is written is dropped; with one, mcp-go waits for the
// forwarder and delivers it before the response.
type eventStore struct {
	sessions *lru.Cache[string, *sessionLog]
	seq      atomic.Uint64
}

// Bounds of the event store.
const (
	storeSessions     = 4096
	streamsPerSession = 8
	eventsPerStream   = 256
)

var _ server.EventStore = (*eventStore)(nil)

type sessionLog struct {
	mu      sync.Mutex
	order   []string // stream ids, oldest first
	streams map[string][]storedEvent
}

type storedEvent struct {
	id  string
	msg json.RawMessage
}

func newEventStore() *eventStore {
	c, _ := lru.New[string, *sessionLog](storeSessions)
	return &eventStore{sessions: c}
}

func (s *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	id := strconv.FormatUint(s.seq.Add(1), 10)
	log, ok := s.sessions.Get(sessionID)
	if !ok {
		log = &sessionLog{streams: map[string][]storedEvent{}}
		if prev, found, _ := s.sessions.PeekOrAdd(sessionID, log); found {
			log = prev
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	events, known := log.streams[streamID]
	if !known {
		log.order = append(log.order, streamID)
		if len(log.order) > streamsPerSession {
			delete(log.streams, log.order[0])
			log.order = log.order[1:]
		}
	}
	if len(events) >= eventsPerStream {
		events = events[1:]
	}
	log.streams[streamID] = append(events, storedEvent{id: id, msg: message})
	return id, nil
}

func (s *eventStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
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

func (s *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	s.sessions.Remove(sessionID)
	return nil
}
