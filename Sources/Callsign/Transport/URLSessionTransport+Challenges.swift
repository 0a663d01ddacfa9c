import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#else
import Security
#endif

// The session delegate's challenges: the proxy's credentials and the server's trust, which are
// Callsign's to answer, then the app's hook (``URLSessionHooks``), then Callsign's answer.
extension SessionDelegate {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Answered off this thread: on Linux this runs on FoundationNetworking's work queue
        // (`InlineOperationQueue`), and what an answer does next — `cancel()`, or `suspend()` and
        // `resume()` to retry with a credential — waits for that queue.
        let completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = { disposition, credential in
            DispatchQueue.global().async { completionHandler(disposition, credential) }
        }
        // What Callsign owns is answered by Callsign: the configured proxy's credentials (they
        // go to the proxy only), and the server's trust when configuration.tls sets roots or pins.
        let space = challenge.protectionSpace
        let ownsChallenge = space.isProxy()
            ? proxyCredentials != nil
            : Self.isServerTrust(space) && !tls.isDefault || Self.isClientCertificate(space) && tls.clientIdentity != nil
        guard !ownsChallenge, let ask = hooks.challenge else {
            answerAsCallsign(challenge, task: task, completionHandler: completionHandler)
            return
        }
        // Every other challenge goes to the app's hook first; `nil` leaves it to Callsign.
        let asked = ChallengeAsked(challenge: challenge, task: task)
        Task {
            if let answer = await ask(asked.challenge, asked.task) {
                completionHandler(answer.disposition, answer.credential)
            } else {
                self.answerAsCallsign(asked.challenge, task: asked.task, completionHandler: completionHandler)
            }
        }
    }

    /// Callsign's own answer: the proxy gets its configured credentials once; any other
    /// challenge is the platform's business below (a 401 reaches the caller as a response).
    private func answerAsCallsign(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.protectionSpace.isProxy() {
            if let credentials = proxyCredentials, challenge.previousFailureCount == 0 {
                completionHandler(
                    .useCredential, URLCredential(user: credentials.username, password: credentials.password, persistence: .forSession))
            } else {
                completionHandler(.cancelAuthenticationChallenge, nil)
            }
            return
        }
        // Authentication is Callsign's job; a 401 must reach the caller as a response.
        answerServerChallenge(challenge, task: task, completionHandler: completionHandler)
    }

    /// A challenge and its task, handed to the app's hook from another task. Safety: Foundation
    /// makes both before the delegate is called and documents them as safe to use from any
    /// thread; neither is changed here.
    private struct ChallengeAsked: @unchecked Sendable {
        let challenge: URLAuthenticationChallenge
        let task: URLSessionTask
    }

    // The one place where this file differs by platform: which challenges each one raises and
    // how they are answered.
    #if canImport(FoundationNetworking)
    /// Whether a challenge is about the server's trust: FoundationNetworking raises none.
    private static func isServerTrust(_ space: URLProtectionSpace) -> Bool { false }

    /// Whether a challenge asks for the client's certificate: FoundationNetworking raises none.
    private static func isClientCertificate(_ space: URLProtectionSpace) -> Bool { false }

    /// Answers a challenge that is not the proxy's. FoundationNetworking raises one only after a
    /// whole 401 response has been delivered to this delegate (on its serial queue), and offers
    /// no way to just complete the task: so the call is finished here with what arrived, then the
    /// task is cancelled.
    private func answerServerChallenge(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
            switch entry {
            case .streaming(let head, let body):
                if let head, let failure = challenge.failureResponse as? HTTPURLResponse {
                    head.resume(returning: failure)
                }
                body.finish()
            case .collecting(let collecting):
                if let failure = challenge.failureResponse as? HTTPURLResponse {
                    collecting.whole.resume(returning: collecting.collected(failure, .success(collecting.body)))
                } else {
                    collecting.whole.resume(throwing: Self.noResponse)
                }
            }
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
    #else
    /// Whether a challenge is about the server's trust.
    private static func isServerTrust(_ space: URLProtectionSpace) -> Bool {
        space.authenticationMethod == NSURLAuthenticationMethodServerTrust
    }

    /// Whether a challenge asks for the client's certificate (mutual TLS).
    private static func isClientCertificate(_ space: URLProtectionSpace) -> Bool {
        space.authenticationMethod == NSURLAuthenticationMethodClientCertificate
    }

    /// Why a PKCS#12 identity was not sent.
    private static var unopenedIdentity: APIError {
        .notSent(.invalidRequest, "the PKCS#12 identity (configuration.tls.clientIdentity) cannot be opened: a wrong password, or not a PKCS#12 file")
    }

    /// Answers a challenge that is not the proxy's: a server's trust, decided by
    /// ``ServerTrust`` from the chain read here and the system's own verdict (the system decides
    /// alone when no trust roots or pins are set); the client's certificate, from a PKCS#12
    /// identity; any other is rejected, so that a 401 reaches the caller as a response.
    private func answerServerChallenge(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let space = challenge.protectionSpace
        let identifier = task.taskIdentifier
        if Self.isServerTrust(space) {
            guard !tls.isDefault, let trust = space.serverTrust else {
                completionHandler(.performDefaultHandling, nil)  // the system's decision, as configured
                return
            }
            let chain = ((SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []).map { SecCertificateCopyData($0) as Data }
            let verdict: ServerTrust.SystemVerdict
            if case .only = tls.trustRoots {
                verdict = .notAsked
            } else {
                var failure: CFError?
                verdict = SecTrustEvaluateWithError(trust, &failure)
                    ? .trusted : ServerTrust.SystemVerdict(securityErrorCode: failure.map { CFErrorGetCode($0) } ?? 0)
            }
            // An IPv6 literal host without its brackets, as the decision reads addresses.
            let host = space.host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let (settings, accepted) = (tls, TrustBox(trust: trust))
            Task {
                if let refusal = await ServerTrust.decide(chain: chain, host: host, settings: settings, system: verdict) {
                    self.refusals.withLock { $0[identifier] = refusal }
                    completionHandler(.cancelAuthenticationChallenge, nil)
                } else {
                    completionHandler(.useCredential, URLCredential(trust: accepted.trust))
                }
            }
        } else if Self.isClientCertificate(space), case .pkcs12(let data, let password)? = tls.clientIdentity?.material {
            guard let credential = Self.credential(pkcs12: data, password: password) else {
                refusals.withLock { $0[identifier] = Self.unopenedIdentity }
                completionHandler(.cancelAuthenticationChallenge, nil)
                return
            }
            completionHandler(.useCredential, credential)
        } else {
            completionHandler(.rejectProtectionSpace, nil)
        }
    }

    /// A PKCS#12 identity as a credential: its identity, and the certificates that follow it.
    private static func credential(pkcs12 data: Data, password: String) -> URLCredential? {
        var items: CFArray?
        // In memory only: never into the user's keychain (macOS imports there by default).
        let options = [kSecImportExportPassphrase as String: password, kSecImportToMemoryOnly as String: true] as [String: Any] as CFDictionary
        guard SecPKCS12Import(data as CFData, options, &items) == errSecSuccess,
            let entry = (items as? [[String: Any]])?.first,
            let value = entry[kSecImportItemIdentity as String].map({ $0 as AnyObject }),
            CFGetTypeID(value) == SecIdentityGetTypeID()
        else { return nil }
        let identity = unsafeDowncast(value, to: SecIdentity.self)
        let chain = (entry[kSecImportItemCertChain as String] as? [SecCertificate]) ?? []
        return URLCredential(identity: identity, certificates: Array(chain.dropFirst()), persistence: .forSession)
    }

    /// A server's trust object, handed to the task that answers once the decision is made.
    /// Safety: Security documents `SecTrust` as safe to use from any thread; it is only read.
    private struct TrustBox: @unchecked Sendable {
        let trust: SecTrust
    }
    #endif
}
