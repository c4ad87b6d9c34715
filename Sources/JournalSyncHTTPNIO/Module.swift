// JournalSyncHTTPNIO (layer 4, a transport): the sync client's AsyncHTTPClient transport, for
// servers, tools and load tests. It imports JournalSyncHTTP, AsyncHTTPClient and NIO; an app's
// client does not link it.
